import type { CheckpointMetadata, OperatorStateRecord, TaskId, TaskStateHandle } from './types.ts';

/**
 * What the checkpoint coordinator tells its driver to do, and the plain-data state it decides from. The state is
 * JSON-serialisable, so a stateless driver (a Lambda of the Step Functions coordinator) can store it between
 * events, and the embedded driver simply keeps it in memory.
 */

/** Inject barrier `checkpointId` at every source. */
export interface TriggerCommand {
  readonly kind: 'trigger';
  readonly checkpointId: number;
  readonly savepoint: boolean;
  /** Epoch ms of the trigger; barriers and metadata carry it. */
  readonly timestamp: number;
  /** Taken after every source finished: once it completes, the job may end. */
  readonly final: boolean;
  /** The `triggerSavepoint` request this savepoint answers. */
  readonly savepointRequestId: number | undefined;
}

/**
 * Every expected task acknowledged: write the metadata atomically, then report `metadataCommitted` (or `abort` the
 * checkpoint if the write failed). Only a committed checkpoint is complete.
 */
export interface CommitMetadataCommand {
  readonly kind: 'commitMetadata';
  readonly metadata: CheckpointMetadata;
}

/** The checkpoint is complete: tell every task (two-phase-commit sinks commit now). */
export interface NotifyCompleteCommand {
  readonly kind: 'notifyComplete';
  readonly checkpointId: number;
  readonly final: boolean;
}

/** The checkpoint failed: tell every task to stop aligning it, and remove whatever was written of it. */
export interface AbortCommand {
  readonly kind: 'abort';
  readonly checkpointId: number;
  readonly reason: string;
}

/** Retention: remove these complete checkpoints (never savepoints), oldest first. */
export interface DiscardCommand {
  readonly kind: 'discard';
  readonly checkpointIds: readonly number[];
}

/** A savepoint request that will not be carried out (the job finished or a task failed before its turn). */
export interface SavepointRejectedCommand {
  readonly kind: 'savepointRejected';
  readonly requestId: number;
  readonly reason: string;
}

/**
 * More consecutive checkpoints failed than the options tolerate: fail the job (it restarts or fails as its restart
 * strategy says). The coordinator has stopped: nothing is triggered any more.
 */
export interface FailJobCommand {
  readonly kind: 'failJob';
  /** Consecutive failed checkpoints, the last one included. */
  readonly failures: number;
  readonly tolerated: number;
  readonly checkpointId: number;
  /** Why the last checkpoint failed. */
  readonly reason: string;
}

export type CoordinatorCommand =
  | FailJobCommand
  | TriggerCommand
  | CommitMetadataCommand
  | NotifyCompleteCommand
  | AbortCommand
  | DiscardCommand
  | SavepointRejectedCommand;

/**
 * How an acknowledgement was taken. Only `accepted` changes anything; the others are ignored and reported so the
 * driver can log them: `late` (the checkpoint already completed or was aborted), `unknown` (never triggered),
 * `duplicate` (this task already acknowledged it), `unexpectedTask` (not a task the checkpoint waits for: not in the
 * plan, or finished before acknowledging).
 */
export type AckOutcome = 'accepted' | 'late' | 'unknown' | 'duplicate' | 'unexpectedTask';

export type CheckpointStatus = 'in-progress' | 'completed' | 'failed';

/** One line of checkpoint history, as the REST API shows it. */
export interface CheckpointHistoryEntry {
  readonly checkpointId: number;
  readonly status: CheckpointStatus;
  readonly savepoint: boolean;
  readonly final: boolean;
  /** Epoch ms. */
  readonly triggeredAt: number;
  /** From trigger to metadata committed (completed) or to abort (failed); undefined while in progress. */
  readonly durationMs: number | undefined;
  /** Sum of the acknowledged tasks' state bytes. */
  readonly bytes: number;
  readonly acknowledgedTasks: number;
  readonly totalTasks: number;
  readonly failureReason: string | undefined;
}

export interface InFlightCheckpoint {
  readonly checkpointId: number;
  readonly savepoint: boolean;
  readonly final: boolean;
  readonly savepointRequestId: number | undefined;
  readonly triggeredAt: number;
  /** `acknowledging` until every expected task acked, then `committing` until the metadata commit resolves. */
  readonly phase: 'acknowledging' | 'committing';
  readonly waitingFor: readonly TaskId[];
  readonly acknowledged: readonly TaskStateHandle[];
}

export interface CoordinatorState {
  /**
   * `stopped` after a task failed or too many checkpoints failed in a row (the job restarts or fails); `finished`
   * after the final checkpoint completed.
   */
  readonly status: 'running' | 'stopped' | 'finished';
  readonly maxParallelism: number;
  /** Parallelism of each vertex in the plan, by vertex id. */
  readonly parallelism: Readonly<Record<number, number>>;
  /** Tasks a new checkpoint waits for: the plan minus the tasks that finished for good. */
  readonly expectedTasks: readonly TaskId[];
  readonly finishedTasks: readonly TaskId[];
  /** Highest id ever triggered (or restored from); the next checkpoint gets the one after. */
  readonly lastCheckpointId: number;
  /** Epoch ms of the last trigger, or of the start before the first. */
  readonly lastTriggerAt: number;
  /** Epoch ms at which the last checkpoint completed or was aborted. */
  readonly lastEndedAt: number | undefined;
  /**
   * Checkpoints (not savepoints) failed since the last completed one; the next trigger backs off accordingly.
   * Absent in states stored before it existed: 0.
   */
  readonly consecutiveFailures?: number;
  readonly inFlight: InFlightCheckpoint | undefined;
  /** Savepoint requests waiting for the in-flight checkpoint to end, oldest first. */
  readonly queuedSavepoints: readonly number[];
  readonly nextSavepointRequestId: number;
  /** Every source finished: the next checkpoint is the final one, taken as soon as nothing is in flight. */
  readonly finalRequested: boolean;
  /** Complete checkpoints (not savepoints) still kept, oldest first. */
  readonly retained: readonly number[];
  /** Oldest first, at most `historySize` entries. */
  readonly history: readonly CheckpointHistoryEntry[];
  /** What each operator's state means, copied into every checkpoint's metadata. */
  readonly operators?: readonly OperatorStateRecord[];
}
