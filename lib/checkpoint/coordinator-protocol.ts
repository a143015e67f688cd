import type { FencingToken } from '../core/fencing.ts';
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

/**
 * Every expected task acknowledged a savepoint: copy its files into its own self-contained directory and write its
 * metadata there (not into checkpoint storage), then report `metadataCommitted`, or `abort` if that failed.
 */
export interface WriteSavepointCommand {
  readonly kind: 'writeSavepoint';
  readonly metadata: CheckpointMetadata;
  readonly requestId: number;
  /** The savepoint of a stop: once it is written, the coordinator asks for `prepareStop`. */
  readonly stop: boolean;
}

/** A savepoint that does not stop the job is durable: answer its request. Tasks are not notified (see below). */
export interface SavepointCompleteCommand {
  readonly kind: 'savepointComplete';
  readonly requestId: number;
  readonly checkpointId: number;
}

/**
 * A savepoint could not be taken (a task declined it, it timed out, writing it failed): answer its request with the
 * failure. An `abort` command for the same checkpoint precedes it.
 */
export interface SavepointFailedCommand {
  readonly kind: 'savepointFailed';
  readonly requestId: number;
  readonly checkpointId: number;
  readonly reason: string;
}

/**
 * The savepoint of a stop is durable: record that the job continues from it (the embedded driver writes the
 * checkpoint folder's restore marker), then report `stopPrepared`, or `stopFailed` to keep the job running.
 * Nothing is triggered meanwhile.
 */
export interface PrepareStopCommand {
  readonly kind: 'prepareStop';
  readonly requestId: number;
  readonly checkpointId: number;
}

/**
 * The savepoint of a stop was written but the job does not stop with it: `jobFailing` (a task failed first; the
 * job restarts or fails) or `prepareFailed` (recording the stop failed; the job keeps running).
 */
export interface SavepointNotStoppedCommand {
  readonly kind: 'savepointNotStopped';
  readonly requestId: number;
  readonly checkpointId: number;
  readonly why: 'jobFailing' | 'prepareFailed';
  readonly reason: string;
}

/**
 * The stop is complete: its savepoint is durable and recorded, and its `notifyComplete` went out just before. Stop
 * driving: nothing may be triggered or completed after the savepoint, so the savepoint is exactly what the sinks
 * committed. Answer the stop request; the runner may end the job.
 */
export interface HaltCommand {
  readonly kind: 'halt';
  readonly requestId: number;
  readonly checkpointId: number;
}

/**
 * The checkpoint is complete: tell every task (two-phase-commit sinks commit now). Emitted only when due: for
 * every checkpoint, and for the savepoint of a stop, never for another savepoint. As in Flink, sinks commit what an
 * intermediate savepoint covers with the next checkpoint, so that recovery, which never starts from a savepoint,
 * cannot replay what a sink already committed.
 */
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
  | WriteSavepointCommand
  | SavepointCompleteCommand
  | SavepointFailedCommand
  | PrepareStopCommand
  | SavepointNotStoppedCommand
  | HaltCommand
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
 * plan, or finished before acknowledging), `fenced` (sent by an attempt older than the one the coordinator serves: a
 * zombie; see `FencingRefusal`).
 */
export type AckOutcome = 'accepted' | 'late' | 'unknown' | 'duplicate' | 'unexpectedTask' | 'fenced';

/** How a decline was taken: `ignored` when the checkpoint is not in flight, `fenced` as for an ack. */
export type DeclineOutcome = 'aborted' | 'ignored' | 'fenced';

/**
 * An ack or decline refused because its sender's epoch is older than the coordinator's. The coordinator ignores it
 * (a zombie must not abort or complete the live attempt's checkpoint, nor fail the live job); the driver logs it,
 * e.g. as the message of a FencedError built from these two tokens.
 */
export interface FencingRefusal {
  readonly current: FencingToken;
  readonly offered: FencingToken;
}

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
   * after the final checkpoint completed; `halted` after a stop-with-savepoint completed.
   */
  readonly status: 'running' | 'stopped' | 'finished' | 'halted';
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
  /**
   * Source tasks that have not finished yet; when the last one does, the final checkpoint is requested. Absent when
   * the plan's sources were not given (then only `allSourcesFinished` requests it).
   */
  readonly pendingSources?: readonly TaskId[];
  /** Savepoint requests (queued or in flight) that stop the job once complete. Absent: none. */
  readonly stopRequests?: readonly number[];
  /** The savepoint of a stop is durable and `prepareStop` is under way: nothing is triggered until it resolves. */
  readonly stopping?: { readonly requestId: number; readonly checkpointId: number };
  /**
   * The fencing token of the attempt this coordinator serves (given at start): acks and declines from an older
   * epoch are refused, and every checkpoint's metadata records it. Absent: nothing is fenced or recorded.
   */
  readonly fencing?: FencingToken;
  /** Every source finished: the next checkpoint is the final one, taken as soon as nothing is in flight. */
  readonly finalRequested: boolean;
  /** Complete checkpoints (not savepoints) still kept, oldest first. */
  readonly retained: readonly number[];
  /** Oldest first, at most `historySize` entries. */
  readonly history: readonly CheckpointHistoryEntry[];
  /** What each operator's state means, copied into every checkpoint's metadata. */
  readonly operators?: readonly OperatorStateRecord[];
}
