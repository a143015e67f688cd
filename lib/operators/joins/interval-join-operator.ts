import { ConfigError, type Key, type OutputTag, type RecordBatch } from '../../core/index.ts';
import type { ProcessJoinFunction } from '../../contracts/join-functions.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Timer } from '../../state/timers/timer-service.ts';
import { LateRecordRoute } from '../windows/late-record-route.ts';
import { JoinBuffer } from './join-buffer.ts';
import { KeyedJoinBase } from './keyed-join-base.ts';

export interface IntervalJoinSpec<IN1, IN2, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector1: (value: IN1) => K;
  readonly keySelector2: (value: IN2) => K;
  /** Inclusive: a right record r matches a left record l when l.ts + lowerBoundMs <= r.ts <= l.ts + upperBoundMs. */
  readonly lowerBoundMs: number;
  readonly upperBoundMs: number;
  /** Late records of each input go here with their timestamps; without a tag they are dropped and counted. */
  readonly leftLateDataTag?: OutputTag<IN1> | undefined;
  readonly rightLateDataTag?: OutputTag<IN2> | undefined;
  readonly fn: ProcessJoinFunction<IN1, IN2, OUT, K>;
}

/** Timer namespaces of the two buffers' cleanup timers. */
const LEFT = 'left';
const RIGHT = 'right';

/**
 * Flink's IntervalJoinOperator on event time. Each input's records are buffered per key in buckets by timestamp;
 * a record is joined with the other input's buffered records whose timestamps fall in its interval (for a left
 * record at t: [t + lower, t + upper]; for a right record at t: [t - upper, t - lower]), then buffered itself. Pairs
 * carry the larger of their two timestamps.
 *
 * A record is late when its timestamp is at or below the watermark (no record that could still match it is
 * guaranteed to come, since the watermark promises nothing at or below it follows); late records go to the input's
 * late-data tag or are dropped and counted. A left bucket t is removed once the watermark reaches t + upper (t when
 * upper <= 0), a right bucket t once it reaches t - lower (t when lower >= 0): no record that is not late can match
 * it after that. So every pair of non-late records within the bounds is emitted exactly once, and at the final
 * watermark all state is gone.
 */
export class IntervalJoinOperator<IN1, IN2, K extends Key, OUT> extends KeyedJoinBase<IN1, IN2, K, OUT> {
  private left!: JoinBuffer<IN1>;
  private right!: JoinBuffer<IN2>;
  private readonly lower: number;
  private readonly upper: number;
  private readonly leftLate: LateRecordRoute<IN1>;
  private readonly rightLate: LateRecordRoute<IN2>;

  constructor(private readonly spec: IntervalJoinSpec<IN1, IN2, K, OUT>) {
    super(spec.name, spec.fn, spec.keySelector1, spec.keySelector2);
    validateIntervalBounds(spec.name, spec.lowerBoundMs, spec.upperBoundMs);
    this.lower = spec.lowerBoundMs;
    this.upper = spec.upperBoundMs;
    this.leftLate = new LateRecordRoute(spec.leftLateDataTag);
    this.rightLate = new LateRecordRoute(spec.rightLateDataTag);
  }

  /** Late records dropped because the input had no late-data tag. */
  get droppedLateRecords(): number {
    return this.leftLate.dropped + this.rightLate.dropped;
  }

  protected openState(backend: KeyedStateBackend): void {
    this.left = new JoinBuffer<IN1>(backend, 'interval-join-left', false);
    this.right = new JoinBuffer<IN2>(backend, 'interval-join-right', false);
  }

  protected processInput(batch: RecordBatch<IN1 | IN2>, input: number): void {
    if (input === 0) this.processLeft(batch as RecordBatch<IN1>);
    else this.processRight(batch as RecordBatch<IN2>);
    this.flush();
  }

  private processLeft(batch: RecordBatch<IN1>): void {
    const { values, timestamps } = batch;
    const selector = this.spec.keySelector1;
    const { lower, upper, left, right, watermark, timers } = this;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const value = values[i] as IN1;
        const key = this.selectKey(selector, value);
        const ts = timestamps[i] as number;
        if (!Number.isFinite(ts)) throw this.missingTimestamp(ts, 'joins on event-time intervals');
        if (ts <= watermark) {
          this.leftLate.add(batch, i);
          continue;
        }
        const buckets = right.bucketIds();
        for (let b = 0; b < buckets.length; b++) {
          const rightTs = buckets[b] as number;
          if (rightTs < ts + lower || rightTs > ts + upper) continue;
          const matches = right.recordsOf(rightTs);
          for (let m = 0; m < matches.length; m++) this.join(value, matches[m] as IN2, ts, rightTs);
        }
        left.add(ts, value, ts);
        timers.registerEventTimeTimer(key, LEFT, upper > 0 ? ts + upper : ts);
      }
    } catch (err) {
      throw this.failOnRecord(batch, i, err);
    }
  }

  private processRight(batch: RecordBatch<IN2>): void {
    const { values, timestamps } = batch;
    const selector = this.spec.keySelector2;
    const { lower, upper, left, right, watermark, timers } = this;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const value = values[i] as IN2;
        const key = this.selectKey(selector, value);
        const ts = timestamps[i] as number;
        if (!Number.isFinite(ts)) throw this.missingTimestamp(ts, 'joins on event-time intervals');
        if (ts <= watermark) {
          this.rightLate.add(batch, i);
          continue;
        }
        const buckets = left.bucketIds();
        for (let b = 0; b < buckets.length; b++) {
          const leftTs = buckets[b] as number;
          if (leftTs < ts - upper || leftTs > ts - lower) continue;
          const matches = left.recordsOf(leftTs);
          for (let m = 0; m < matches.length; m++) this.join(matches[m] as IN1, value, leftTs, ts);
        }
        right.add(ts, value, ts);
        timers.registerEventTimeTimer(key, RIGHT, lower < 0 ? ts - lower : ts);
      }
    } catch (err) {
      throw this.failOnRecord(batch, i, err);
    }
  }

  protected advanceWatermark(timestamp: number): void | Promise<void> {
    return this.fireTimers(
      () => this.timers.popEventTimeTimers(timestamp),
      (due) => this.removeBuckets(due),
    );
  }

  private removeBuckets(due: readonly Timer[]): void {
    const backend = this.backend;
    for (let i = 0; i < due.length; i++) {
      const timer = due[i] as Timer;
      backend.setCurrentKey(timer.key);
      if (timer.namespace === LEFT) this.left.removeBucket(this.upper > 0 ? timer.timestamp - this.upper : timer.timestamp);
      else this.right.removeBucket(this.lower < 0 ? timer.timestamp + this.lower : timer.timestamp);
    }
  }

  protected override discard(): void {
    super.discard();
    this.leftLate.discard();
    this.rightLate.discard();
  }

  protected override flush(): void {
    super.flush();
    this.leftLate.flush(this.output);
    this.rightLate.flush(this.output);
  }
}

/** Inclusive bounds must be whole milliseconds with lower <= upper. */
export function validateIntervalBounds(name: string, lower: number, upper: number): void {
  if (!Number.isSafeInteger(lower) || !Number.isSafeInteger(upper)) {
    throw new ConfigError(
      `interval join "${name}": bounds must be whole numbers of milliseconds, got [${String(lower)}, ${String(upper)}]`,
    );
  }
  if (lower > upper) {
    throw new ConfigError(
      `interval join "${name}": the lower bound (${lower} ms) is above the upper bound (${upper} ms), so nothing ` +
        'could match; use between(lower, upper) with lower <= upper (after exclusive bounds are applied)',
    );
  }
}
