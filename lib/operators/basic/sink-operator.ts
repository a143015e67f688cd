import type { RecordBatch } from '../../core/index.ts';
import {
  isTwoPhaseCommitSink,
  type Committer,
  type Sink,
  type SinkContext,
  type SinkWriter,
  type TwoPhaseCommitSink,
  type TwoPhaseCommitSinkWriter,
} from '../../connectors/sink.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import { crashPoint } from '../../core/fault-injection.ts';

/** A committable waiting for its checkpoint to complete, as kept in operator state. */
interface PendingCommittable {
  readonly checkpointId: number;
  readonly committable: unknown;
}

/**
 * Adapts a Sink to the operator contract: the tail of a chain, emitting nothing. A two-phase-commit sink prepares
 * at each checkpoint and commits when the checkpoint completes; committables restored from a checkpoint are
 * committed again at start (commits are idempotent). Without checkpointing, it prepares and commits at the end
 * of input.
 */
export class SinkOperator<T> implements Operator<T, never> {
  private writer: SinkWriter<T> | undefined;
  private committer: Committer<unknown> | undefined;
  private pending: PendingCommittable[] = [];
  private restored: readonly unknown[] = [];
  private checkpointing = false;

  constructor(
    readonly name: string,
    private readonly sink: Sink<T>,
  ) {}

  initializeState(items: readonly unknown[]): void {
    this.restored = items.map((item) => (item as PendingCommittable).committable);
  }

  async open(ctx: OperatorContext): Promise<void> {
    this.checkpointing = ctx.checkpointing;
    const sinkCtx: SinkContext = {
      subtask: ctx.subtask,
      parallelism: ctx.parallelism,
      operatorName: this.name,
      fencing: ctx.fencing,
      checkpointing: ctx.checkpointing,
    };
    if (isTwoPhaseCommitSink(this.sink)) {
      const sink = this.sink as TwoPhaseCommitSink<T, unknown>;
      this.committer = await sink.createCommitter(sinkCtx);
      // Committables of the restored (complete) checkpoint are committed first; the rest of earlier runs is dangling.
      await this.committer.commit(this.restored);
      await sink.cleanUpDangling(sinkCtx, this.restored);
      this.restored = [];
    }
    this.writer = await this.sink.createWriter(sinkCtx);
  }

  processBatch(batch: RecordBatch<T>): void | Promise<void> {
    return this.writer!.write(batch);
  }

  processWatermark(): void {}

  async snapshotState(checkpointId: number): Promise<unknown[]> {
    if (this.committer !== undefined) {
      const prepared = await (this.writer as TwoPhaseCommitSinkWriter<T, unknown>).prepareCommit(checkpointId);
      for (const committable of prepared) this.pending.push({ checkpointId, committable });
      if (prepared.length > 0) crashPoint('after-prepare-commit');
    }
    return [...this.pending];
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    if (this.committer === undefined) return;
    const done = this.pending.filter((p) => p.checkpointId <= checkpointId);
    if (done.length > 0) {
      await this.committer.commit(done.map((p) => p.committable));
      this.pending = this.pending.filter((p) => p.checkpointId > checkpointId);
    }
    await this.committer.checkpointComplete?.(checkpointId);
  }

  async endInput(): Promise<void> {
    if (this.committer !== undefined && !this.checkpointing) {
      // No checkpoints: the end of input is the only commit point.
      await this.committer.commit(await (this.writer as TwoPhaseCommitSinkWriter<T, unknown>).prepareCommit(0));
    }
    await this.writer?.finish?.();
  }

  close(): void | Promise<void> {
    return this.writer?.close?.();
  }
}
