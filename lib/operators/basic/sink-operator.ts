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
export interface PendingCommittable {
  readonly checkpointId: number;
  readonly committable: unknown;
}

/**
 * Adapts a Sink to the operator contract: the tail of a chain, emitting nothing. A two-phase-commit sink prepares
 * at each checkpoint and commits when the checkpoint completes; committables restored from a checkpoint are
 * committed again at start (commits are idempotent). Without checkpointing, it prepares and commits at the end
 * of input.
 *
 * In coordinator commit mode (a cluster slot) it never commits: its operator state at checkpoint n is every
 * committable prepared at n or at an earlier barrier whose checkpoint it has not yet seen complete, which the slot
 * hands to the coordinator with its ack. An aborted checkpoint's (or a plain savepoint's) committables are thus
 * committed with the next completed checkpoint, whose source positions are past their records; committing one twice
 * is a no-op (commits are idempotent). Restored ones are the coordinator's to recommit (they belong to the restored,
 * completed checkpoint), so they are neither committed nor carried.
 */
export class SinkOperator<T> implements Operator<T, never> {
  private writer: SinkWriter<T> | undefined;
  private committer: Committer<unknown> | undefined;
  private pending: PendingCommittable[] = [];
  private restored: readonly unknown[] = [];
  private checkpointing = false;
  private coordinatorCommits = false;

  constructor(
    readonly name: string,
    /** The sink written to (a cluster reads its `externalCommit` descriptor). */
    readonly sink: Sink<T>,
  ) {}

  initializeState(items: readonly unknown[]): void {
    this.restored = items.map((item) => (item as PendingCommittable).committable);
  }

  async open(ctx: OperatorContext): Promise<void> {
    this.checkpointing = ctx.checkpointing;
    this.coordinatorCommits = ctx.sinkCommitMode === 'coordinator';
    const sinkCtx: SinkContext = {
      subtask: ctx.subtask,
      parallelism: ctx.parallelism,
      operatorName: this.name,
      fencing: ctx.fencing,
      checkpointing: ctx.checkpointing,
      ...(ctx.sinkCommitMode === undefined ? {} : { commitMode: ctx.sinkCommitMode }),
    };
    if (isTwoPhaseCommitSink(this.sink)) {
      const sink = this.sink as TwoPhaseCommitSink<T, unknown>;
      this.committer = await sink.createCommitter(sinkCtx);
      // Committables of the restored (complete) checkpoint are committed first; the rest of earlier runs is dangling.
      // In coordinator mode the coordinator recommits the restored checkpoint's committables itself.
      if (!this.coordinatorCommits) await this.committer.commit(this.restored);
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
      if (prepared.length > 0) crashPoint('after-prepare-commit');
      for (const committable of prepared) this.pending.push({ checkpointId, committable });
    }
    return [...this.pending];
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    if (this.committer === undefined) return;
    if (this.coordinatorCommits) {
      // The coordinator committed them (with checkpoint `checkpointId` or earlier): no longer carried.
      this.pending = this.pending.filter((p) => p.checkpointId > checkpointId);
      return;
    }
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
