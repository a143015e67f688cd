import type { RecordBatch } from '../core/index.ts';

export interface SinkContext {
  readonly subtask: number;
  readonly parallelism: number;
  /** Name of the sink operator, for file names and errors. */
  readonly operatorName: string;
  /**
   * Identifies this run of the job: it changes at every start and restart, so files a sink names with it can be
   * told apart from leftovers of earlier runs. @default a fresh random id per run
   */
  readonly attempt?: string;
}

/** Writes the records of one sink subtask. Called by one task, never concurrently. */
export interface SinkWriter<T> {
  /** May buffer; a returned promise makes the task wait before the next input (backpressure). */
  write(batch: RecordBatch<T>): void | Promise<void>;
  /** All input has ended: write out everything buffered and finish (rename, close files). */
  finish?(): void | Promise<void>;
  /** Release resources; called on success and on failure (after finish on success). */
  close?(): void | Promise<void>;
}

export interface Sink<T> {
  readonly name: string;
  createWriter(ctx: SinkContext): SinkWriter<T> | Promise<SinkWriter<T>>;
}

/**
 * A sink writer taking part in two-phase commit (exactly-once output). The runtime drives it:
 * - `write` goes into the current transaction (e.g. an in-progress file);
 * - at a checkpoint barrier, `prepareCommit(checkpointId)` closes the transaction and returns its committables
 *   (plain data), which the runtime stores in the checkpoint together with those still uncommitted;
 * - once checkpoint `checkpointId` is complete, the runtime calls the sink's `Committer.commit` with them.
 * At the end of input the runtime takes a final checkpoint, so `finish` must not make anything visible itself.
 */
export interface TwoPhaseCommitSinkWriter<T, C> extends SinkWriter<T> {
  prepareCommit(checkpointId: number): C[] | Promise<C[]>;
}

/**
 * Makes committables visible. `commit` must be idempotent: after a recovery the same committables are committed
 * again and must then change nothing (Flink's Committer contract).
 */
export interface Committer<C> {
  commit(committables: readonly C[]): void | Promise<void>;
}

export interface TwoPhaseCommitSink<T, C> extends Sink<T> {
  readonly twoPhaseCommit: true;
  createWriter(ctx: SinkContext): TwoPhaseCommitSinkWriter<T, C> | Promise<TwoPhaseCommitSinkWriter<T, C>>;
  createCommitter(ctx: SinkContext): Committer<C> | Promise<Committer<C>>;
  /**
   * Called when a subtask starts from a checkpoint (or fresh, with none): removes what earlier runs of this subtask
   * left uncommitted that no checkpoint refers to (e.g. in-progress files). `keep` lists committables still owned
   * by the restored checkpoint.
   */
  cleanUpDangling(ctx: SinkContext, keep: readonly C[]): void | Promise<void>;
}

export function isTwoPhaseCommitSink<T>(sink: Sink<T>): sink is TwoPhaseCommitSink<T, unknown> {
  return (sink as Partial<TwoPhaseCommitSink<T, unknown>>).twoPhaseCommit === true;
}
