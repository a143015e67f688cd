import type { FencingToken, RecordBatch } from '../core/index.ts';

export interface SinkContext {
  readonly subtask: number;
  readonly parallelism: number;
  /** Name of the sink operator, for file names and errors. */
  readonly operatorName: string;
  /**
   * The fencing token of this attempt of the job: a higher epoch at every start and restart. Files and
   * transactions a sink names with `fencingTag(fencing)` can be told apart from leftovers of earlier attempts, and a
   * sink that shares a commit target between attempts refuses commits of an older epoch than one it has seen
   * (FencedError). @default a fresh random name per writer, and no fencing
   */
  readonly fencing?: FencingToken;
  /**
   * Whether the job takes checkpoints. With them, the runtime drives a two-phase-commit writer through checkpoints
   * (`prepareCommit` at each barrier and at the end of input, `Committer.commit` once the checkpoint is complete)
   * and the writer makes nothing visible by itself, not at a roll-over and not in `finish`. `false`: no checkpoints;
   * a writer may make output visible on its own (e.g. at a roll-over); at the end of input the runtime calls
   * `prepareCommit` then `Committer.commit`, or only `finish`, which then makes everything visible. Absent: a
   * two-phase-commit writer assumes checkpoints (nothing becomes visible except through a commit).
   */
  readonly checkpointing?: boolean;
  /**
   * Who commits a two-phase-commit writer's committables: `self` (the runtime calls the sink's Committer after each
   * completed checkpoint and for restored committables) or `coordinator` (a cluster: the checkpoint coordinator
   * commits them from the sink's `externalCommit` descriptor; the runtime only hands committables over with the
   * checkpoint and never commits them itself). @default 'self'
   */
  readonly commitMode?: 'self' | 'coordinator';
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
 * At the end of input the runtime takes a final checkpoint, so `finish` must not make anything visible itself
 * (see `SinkContext.checkpointing` for the runtime's calls without checkpoints).
 */
export interface TwoPhaseCommitSinkWriter<T, C> extends SinkWriter<T> {
  prepareCommit(checkpointId: number): C[] | Promise<C[]>;
}

/**
 * Makes committables visible. `commit` must be idempotent: after a recovery the same committables are committed
 * again and must then change nothing (Flink's Committer contract). The runtime commits a subtask's restored
 * committables when it starts, before it acknowledges any checkpoint, so once a checkpoint of the current attempt
 * is complete every restored transaction is committed and whatever earlier attempts left is garbage.
 */
export interface Committer<C> {
  commit(committables: readonly C[]): void | Promise<void>;
  /**
   * Checkpoint `checkpointId` of the current attempt is complete; called after the commit of its committables, and
   * also when this subtask had none. From the first call on, every subtask has committed its restored share, so a
   * committer may delete what earlier attempts left uncommitted even when it never commits a transaction of its own
   * (e.g. a run restored from the final checkpoint). Optional.
   */
  checkpointComplete?(checkpointId: number): void | Promise<void>;
}

export interface TwoPhaseCommitSink<T, C> extends Sink<T> {
  readonly twoPhaseCommit: true;
  /**
   * JSON that lets a process without the job's code commit this sink's committables (the cluster's coordinator):
   * `kind` names a committer in the coordinator's registry, the rest are its settings. Committables must then be
   * plain JSON. A sink without it cannot run in a cluster (ConfigError). @default undefined
   */
  readonly externalCommit?: { readonly kind: string; readonly [setting: string]: unknown };
  createWriter(ctx: SinkContext): TwoPhaseCommitSinkWriter<T, C> | Promise<TwoPhaseCommitSinkWriter<T, C>>;
  createCommitter(ctx: SinkContext): Committer<C> | Promise<Committer<C>>;
  /**
   * Called when a subtask starts from a checkpoint (or fresh, with none), before or after it commits the restored
   * committables dealt to it: removes what earlier runs (other fencing tokens, of any subtask: the job may have been
   * rescaled) left uncommitted that no checkpoint refers to (e.g. in-progress files). Never touches what the current
   * attempt writes, nor anything in `keep`, so all subtasks may call it at once. `keep` is what the restored
   * checkpoint dealt to this subtask; other subtasks' shares are not in it, so what may still be one of them (a
   * pending transaction of an earlier attempt) must be left for later. Needs `ctx.fencing`.
   */
  cleanUpDangling(ctx: SinkContext, keep: readonly C[]): void | Promise<void>;
}

export function isTwoPhaseCommitSink<T>(sink: Sink<T>): sink is TwoPhaseCommitSink<T, unknown> {
  return (sink as Partial<TwoPhaseCommitSink<T, unknown>>).twoPhaseCommit === true;
}
