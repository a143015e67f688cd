import type { FencingToken } from '../../core/fencing.ts';
import type { CheckpointHistoryEntry } from '../../checkpoint/coordinator-protocol.ts';
import type { TaskId, TaskStateHandle } from '../../checkpoint/types.ts';

/** A complete savepoint. */
export interface SavepointResult {
  readonly checkpointId: number;
  /** Where its self-contained copy is (a directory, or an object-store prefix). */
  readonly path: string;
}

/** A history entry with the location of a completed savepoint. */
export interface DriverHistoryEntry extends CheckpointHistoryEntry {
  readonly path: string | undefined;
}

/**
 * What the tasks of an attempt report to the checkpoint coordinator, wherever it runs. `token` is the sender's
 * fencing token: the coordinator refuses acks and declines from an older epoch than its attempt's (it logs them
 * and changes nothing). A link inside the attempt's own process may leave it out: its messages cannot be stale.
 */
export interface CoordinatorLink {
  ack(checkpointId: number, handle: TaskStateHandle, token?: FencingToken): void;
  decline(checkpointId: number, task: TaskId, reason: string, token?: FencingToken): void;
  /** A source task read all its input; the coordinator counts them and takes the final checkpoint after the last. */
  sourceFinished(task: TaskId): void;
}

/**
 * One attempt's checkpoint coordination, as the runners and the job controls (REST) use it. The pure
 * CheckpointCoordinator decides; a driver carries out its commands with its own timers, storage and transport.
 * Implemented by EmbeddedCheckpointDriver (timers in the runner's thread); the Step Functions driver of the cluster
 * runtime implements it too. A driver is running once created, for the attempt whose fencing token it was given.
 */
export interface CheckpointDriver extends CoordinatorLink {
  /**
   * Takes a savepoint now, or once the checkpoint in flight ended; resolves once it is complete. With `stop`, the
   * driver then delivers its completion to the tasks and halts: nothing is triggered or completed after it, so the
   * savepoint is exactly what the sinks committed, and the runner may end the job (`stoppedWithSavepoint`).
   * Rejects with JobNotRunningError when no savepoint can be taken, SavepointFailedError when it failed.
   */
  triggerSavepoint(options?: { stop?: boolean }): Promise<SavepointResult>;
  /**
   * Rejects once checkpointing fails the job (CheckpointingFailedError: more consecutive checkpoints failed than
   * tolerated), or the driver itself broke. Never resolves. The runner fails the attempt with it.
   */
  readonly failed: Promise<never>;
  /** Set once a stop's savepoint is complete and its completion went to the tasks: the job may end. */
  readonly stoppedWithSavepoint: SavepointResult | undefined;
  /** The highest checkpoint id used; the next attempt's driver continues after it. */
  readonly lastCheckpointId: number;
  /** Newest first, with the locations of completed savepoints (the REST API's checkpoint list). */
  history(): DriverHistoryEntry[];
  /** Oldest first, as the next attempt's driver takes it over. */
  readonly historyState: readonly CheckpointHistoryEntry[];
  readonly savepointPaths: ReadonlyMap<number, string>;
  /** Stops coordinating (the attempt ended): nothing more is triggered, pending savepoint requests are rejected. */
  stop(): Promise<void>;
}
