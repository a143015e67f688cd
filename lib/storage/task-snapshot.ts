import type { KeyedStateHandle, PendingKeyedSnapshot } from '../state/index.ts';

/** The state of one operator of a chained task, as plain data. */
export interface OperatorSnapshot {
  readonly nodeId: number;
  /** The keyed states the operator declared: `{ name, kind, ttlMs? }` (absent in older snapshots). */
  readonly states?: unknown[];
  /** A pending snapshot (file-based state) exists only between the two phases; files are written before encoding. */
  readonly keyed?: KeyedStateHandle | PendingKeyedSnapshot | undefined;
  readonly timers?: unknown;
  /** Non-keyed state, e.g. a two-phase-commit sink's committables; redistributed as a list on rescaling. */
  readonly operatorState?: unknown[];
  readonly watermark: number;
}

/** Everything one task (vertex, subtask) contributes to a checkpoint; encoded by task-state-codec.ts. */
export interface TaskSnapshot {
  readonly vertex: number;
  readonly subtask: number;
  /** Positions of the source splits the task owns, when the task runs a source. */
  readonly sourceSplits?: unknown[];
  readonly splitWatermarks?: unknown;
  /** A cluster slot's exchange state (sender markers, receiver positions): SlotExchangeState in lib/runtime/cluster. */
  readonly exchange?: unknown;
  readonly operators: OperatorSnapshot[];
}
