import { SluiceError } from './errors.ts';

/**
 * Who is allowed to write: carried by every task-state write, ack/decline and sink commit, and recorded in
 * checkpoint metadata. `epoch` is the fencing number: it only grows, across restarts within a run and across
 * runs of the same job (a new run starts above the highest epoch it finds recorded). `attempt` counts restarts
 * within one run (0 = first) and is for people reading logs; it never decides anything.
 */
export interface FencingToken {
  readonly attempt: number;
  readonly epoch: number;
}

export function isFencingToken(value: unknown): value is FencingToken {
  if (typeof value !== 'object' || value === null) return false;
  const { attempt, epoch } = value as Record<string, unknown>;
  return Number.isSafeInteger(attempt) && (attempt as number) >= 0 && Number.isSafeInteger(epoch) && (epoch as number) >= 0;
}

/** A stable text form for file names, DynamoDB attributes and logs: `e<epoch>-a<attempt>`. */
export function fencingTag(token: FencingToken): string {
  return `e${token.epoch}-a${token.attempt}`;
}

/** The token of the next attempt: a strictly higher epoch than any seen so far. */
export function nextFencingToken(previous: FencingToken | undefined, highestSeenEpoch = -1): FencingToken {
  const epoch = Math.max(previous?.epoch ?? -1, highestSeenEpoch) + 1;
  return { attempt: previous === undefined ? 0 : previous.attempt + 1, epoch };
}

/**
 * A write, ack or commit came from an owner older than the one the component already serves (a zombie task, a
 * stale worker, a superseded attempt). Not retriable: the stale owner must stop.
 */
export class FencedError extends SluiceError {
  readonly component: string;
  readonly current: FencingToken;
  readonly offered: FencingToken;

  constructor(component: string, current: FencingToken, offered: FencingToken) {
    super(
      'FENCED',
      `${component} refused a request from epoch ${offered.epoch} (attempt ${offered.attempt}): it already serves epoch ${current.epoch} ` +
        `(attempt ${current.attempt}); a newer attempt of this job owns it now, so this one must stop`,
      { retriable: false },
    );
    this.component = component;
    this.current = current;
    this.offered = offered;
  }
}

/**
 * The check every fenced component applies: an older epoch than the current one is refused; the same or a newer
 * epoch is accepted (the caller then remembers the newer one).
 */
export function assertNotFenced(component: string, current: FencingToken | undefined, offered: FencingToken): void {
  if (current !== undefined && offered.epoch < current.epoch) throw new FencedError(component, current, offered);
}
