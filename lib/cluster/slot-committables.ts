import { SluiceError } from '../core/errors.ts';

/**
 * The sink committables of one slot for one checkpoint: written by the worker as one JSON object beside the slot's
 * task states (`chk-<id>/committables-<slot>-e<epoch>.json`, see `slotCommittablesName`), referenced by the slot's
 * ack item, read by the coordinator's CommitSinks handler, which commits them through the committer registered
 * for each sink's `externalCommit.kind` without loading the job's code. The epoch in the name means a zombie's
 * object never replaces the current owner's.
 */
export interface SlotCommittables {
  readonly version: 1;
  readonly checkpointId: number;
  readonly slot: number;
  readonly epoch: number;
  /** One entry per two-phase-commit sink of the slot, including those with nothing to commit (empty list). */
  readonly sinks: readonly { readonly nodeId: number; readonly committables: readonly unknown[] }[];
}

export function slotCommittablesName(slot: number, epoch: number): string {
  return `committables-${slot}-e${epoch}.json`;
}

export class SlotCommittablesError extends SluiceError {
  constructor(message: string) {
    super('SINK_COMMIT', message, { retriable: false });
  }
}

export function encodeSlotCommittables(value: SlotCommittables): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/** Parses and checks the shape; `where` names the object in the error. */
export function decodeSlotCommittables(bytes: Uint8Array, where: string): SlotCommittables {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new SlotCommittablesError(`${where} is not JSON (${String(cause)}): the slot's committables object is damaged`);
  }
  const v = parsed as Partial<Record<keyof SlotCommittables, unknown>>;
  const integer = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    v.version !== 1 ||
    !integer(v.checkpointId) ||
    !integer(v.slot) ||
    !integer(v.epoch) ||
    !Array.isArray(v.sinks) ||
    !v.sinks.every((s: unknown) => {
      const e = s as { nodeId?: unknown; committables?: unknown } | null;
      return typeof e === 'object' && e !== null && integer(e.nodeId) && Array.isArray(e.committables);
    })
  ) {
    throw new SlotCommittablesError(`${where} is not a version-1 slot committables object (checkpointId, slot, epoch, sinks[{nodeId, committables}])`);
  }
  return parsed as SlotCommittables;
}
