import { MAX_WATERMARK, UserFunctionError, originAt, type RecordBatch } from '../../core/index.ts';
import type { WatermarkGenerator, WatermarkStrategy } from '../../api/watermark-strategy.ts';
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
    const assigner = this.strategy.timestampAssigner;
    const generator = this.generator;
    const values = batch.values;
    const n = values.length;
    let timestamps = batch.timestamps;
    let i = 0;
    try {
      if (assigner !== undefined) {
        const assigned = new Array<number>(n);
        for (; i < n; i++) {
          const ts = assigner(values[i] as T, timestamps[i] as number);
          if (typeof ts !== 'number' || Number.isNaN(ts)) {
            throw new TypeError(`timestamp assigner returned ${String(ts)}; it must return epoch milliseconds as a number`);
          }
          assigned[i] = ts;
          generator.onEvent(values[i] as T, ts);
        }
        timestamps = assigned;
      } else {
        for (; i < n; i++) generator.onEvent(values[i] as T, timestamps[i] as number);
      }
    } catch (err) {
      throw new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, i), err);
    }
    if (this.idle) this.setIdle(false);
    this.lastRecordAt = this.ctx.clock.now();
    this.output.emit(timestamps === batch.timestamps ? batch : { ...batch, timestamps });
    const wm = generator.currentWatermark();
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
