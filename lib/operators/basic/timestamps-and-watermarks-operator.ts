import { InvalidTimestampError, MAX_WATERMARK, originAt, type RecordBatch } from '../../core/index.ts';
import { assignTimestamps, type InvalidTimestamp } from './assign-timestamps.ts';
import type { WatermarkGenerator, WatermarkStrategy } from '../../contracts/watermark-strategy.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { IdleAwareOutput, Output } from '../output.ts';

/**
 * Assigns timestamps and generates watermarks for one subtask (the operator form of a WatermarkStrategy; sources
 * given a strategy do the same per split). Upstream watermarks are ignored, except the final one at end of input.
 * The watermark is emitted after each batch in which it advanced.
 */
export class TimestampsAndWatermarksOperator<T> implements Operator<T, T> {
  private output!: Output<T>;
  private ctx!: OperatorContext;
  private generator!: WatermarkGenerator<T>;
  private emitted = Number.NEGATIVE_INFINITY;
  private lastRecordAt = 0;
  private idle = false;

  constructor(
    readonly name: string,
    private readonly strategy: WatermarkStrategy<T>,
  ) {}

  open(ctx: OperatorContext, output: Output<T>): void {
    this.ctx = ctx;
    this.output = output;
    this.generator = this.strategy.createGenerator();
    this.lastRecordAt = ctx.clock.now();
    this.scheduleIdleCheck();
  }

  processBatch(batch: RecordBatch<T>): void {
    const stamped = assignTimestamps(batch, this.strategy.timestampAssigner, this.generator, this.name, this.ctx.subtask, (bad) =>
      this.invalid(batch, bad),
    );
    if (this.idle) this.setIdle(false);
    this.lastRecordAt = this.ctx.clock.now();
    this.output.emit(stamped);
    const wm = this.generator.currentWatermark();
    if (wm > this.emitted) {
      this.emitted = wm;
      this.output.emitWatermark(wm);
    }
  }

  processWatermark(timestamp: number): void {
    if (timestamp === MAX_WATERMARK && this.emitted < MAX_WATERMARK) {
      this.emitted = MAX_WATERMARK;
      this.output.emitWatermark(MAX_WATERMARK);
    }
  }

  onProcessingTime(time: number): void {
    const timeout = this.strategy.idleTimeoutMs;
    if (timeout === undefined || this.idle) return;
    if (time - this.lastRecordAt >= timeout) this.setIdle(true);
    else this.scheduleIdleCheck();
  }

  /** An operator has no dead-letter output (a source does: give the source the strategy to use it). */
  private invalid(batch: RecordBatch<T>, bad: InvalidTimestamp): never {
    throw new InvalidTimestampError(
      this.name,
      this.ctx.subtask,
      originAt(batch, bad.index),
      bad.timestamp,
      bad.reason,
      'assignTimestampsAndWatermarks has no dead-letter output: pass the WatermarkStrategy to env.fromSource so ' +
        "that such records go to the source's dead letters, or reject them in the source's parse function",
    );
  }

  private setIdle(idle: boolean): void {
    this.idle = idle;
    (this.output as Partial<IdleAwareOutput<T>>).markIdle?.(idle);
    if (!idle) this.scheduleIdleCheck();
  }

  private scheduleIdleCheck(): void {
    const timeout = this.strategy.idleTimeoutMs;
    if (timeout !== undefined) this.ctx.requestProcessingTimeWakeup(this.lastRecordAt + timeout);
  }
}
