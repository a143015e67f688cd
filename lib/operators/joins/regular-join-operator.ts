import { ConfigError, type Key, type RecordBatch } from '../../core/index.ts';
import type { ProcessJoinFunction, RetentionTimeDomain } from '../../contracts/join-functions.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import { afterwards } from '../read-ahead.ts';
import type { Timer } from '../../state/timers/timer-service.ts';
import { WindowTimers } from '../windows/window-timers.ts';
import { JoinBuffer } from './join-buffer.ts';
import { KeyedJoinBase } from './keyed-join-base.ts';

export interface StateRetention {
  /** How long a buffered record stays joinable. */
  readonly ms: number;
  /**
   * 'event': a record with timestamp t is dropped once the watermark reaches t + ms (deterministic);
   * 'processing': a record is dropped `ms` after it arrived, by the task's clock (Flink SQL's state TTL).
   */
  readonly timeDomain: RetentionTimeDomain;
}

export interface RegularJoinSpec<IN1, IN2, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector1: (value: IN1) => K;
  readonly keySelector2: (value: IN2) => K;
  /** Without retention every record is kept for the life of the job. */
  readonly retention?: StateRetention | undefined;
  readonly fn: ProcessJoinFunction<IN1, IN2, OUT, K>;
}

/** The single bucket of a join without retention. */
const FOREVER = 0;

/**
 * An unbounded inner equi-join (Flink SQL's regular join) on keyed inputs: every record is joined with all
 * records of the other input buffered for its key, then buffered itself. Pairs carry the larger of the two
 * timestamps and are emitted when the second of them arrives.
 *
 * Without retention the buffers grow with the number of distinct records. With retention, records are buffered
 * in buckets by expiry time, and one cleanup timer per key, input and bucket drops the bucket when it expires;
 * an expired bucket is never joined even if its timer has not fired yet. A record that has already expired when
 * it arrives (event time: t + ms <= watermark) is still joined with what is buffered, but not buffered itself.
 * Processing-time expiry reads the clock once per input batch, so a batch's records share one bucket per key.
 */
export class RegularJoinOperator<IN1, IN2, K extends Key, OUT> extends KeyedJoinBase<IN1, IN2, K, OUT> {
  private left!: JoinBuffer<IN1>;
  private right!: JoinBuffer<IN2>;
  private cleanupTimers: WindowTimers | undefined;
  private readonly retentionMs: number;
  private readonly eventTime: boolean;

  constructor(private readonly spec: RegularJoinSpec<IN1, IN2, K, OUT>) {
    super(spec.name, spec.fn, spec.keySelector1, spec.keySelector2);
    const retention = spec.retention;
    if (retention !== undefined) validateRetention(spec.name, retention);
    this.retentionMs = retention?.ms ?? Number.POSITIVE_INFINITY;
    this.eventTime = retention?.timeDomain === 'event';
  }

  protected openState(backend: KeyedStateBackend): void {
    this.left = new JoinBuffer<IN1>(backend, 'regular-join-left', true);
    this.right = new JoinBuffer<IN2>(backend, 'regular-join-right', true);
    if (this.spec.retention !== undefined) {
      const ctx = this.ctx;
      this.cleanupTimers = new WindowTimers(this.timers, this.eventTime, (time) => ctx.requestProcessingTimeWakeup(time));
      // Restored processing-time timers need their wake-up.
      this.cleanupTimers.requestNextWakeup();
    }
  }

  protected processInput(batch: RecordBatch<IN1 | IN2>, input: number): void {
    if (input === 0) this.joinBatch(batch as RecordBatch<IN1>, this.spec.keySelector1, this.left, this.right, 0);
    else this.joinBatch(batch as RecordBatch<IN2>, this.spec.keySelector2, this.right, this.left, 1);
    this.flush();
  }

  /** Joins each record of one input's batch with the other input's buffer, then buffers it. */
  private joinBatch<OWN, OTHER>(
    batch: RecordBatch<OWN>,
    selector: (value: OWN) => K,
    own: JoinBuffer<OWN>,
    other: JoinBuffer<OTHER>,
    input: 0 | 1,
  ): void {
    const { values, timestamps } = batch;
    const retained = this.cleanupTimers;
    const eventTime = this.eventTime;
    const retentionMs = this.retentionMs;
    // Buckets at or below `expired` are gone (their timers may not have fired yet in processing time).
    const expired = retained === undefined ? Number.NEGATIVE_INFINITY : eventTime ? this.watermark : this.ctx.clock.now();
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const value = values[i] as OWN;
        const key = this.selectKey(selector, value);
        const ts = timestamps[i] as number;
        let bucket = FOREVER;
        if (retained !== undefined) {
          if (eventTime && !Number.isFinite(ts)) throw this.missingTimestamp(ts, 'retains state in event time');
          bucket = (eventTime ? ts : expired) + retentionMs;
        }
        const buckets = other.bucketIds();
        for (let b = 0; b < buckets.length; b++) {
          const otherBucket = buckets[b] as number;
          if (otherBucket <= expired) continue;
          const matches = other.recordsOf(otherBucket);
          const matchTimes = other.timestampsOf(otherBucket);
          for (let m = 0; m < matches.length; m++) {
            if (input === 0) this.join(value as unknown as IN1, matches[m] as unknown as IN2, ts, matchTimes[m] as number);
            else this.join(matches[m] as unknown as IN1, value as unknown as IN2, matchTimes[m] as number, ts);
          }
        }
        if (bucket <= expired) continue;
        own.add(bucket, value, ts);
        retained?.register(key, input, bucket);
      }
    } catch (err) {
      throw this.failOnRecord(batch, i, err);
    }
  }

  protected advanceWatermark(timestamp: number): void | Promise<void> {
    if (!this.eventTime) return undefined;
    return this.fireTimers(
      () => this.timers.popEventTimeTimers(timestamp),
      (due) => this.removeExpired(due),
    );
  }

  onProcessingTime(time: number): void | Promise<void> {
    const cleanupTimers = this.cleanupTimers;
    if (cleanupTimers === undefined || this.eventTime) return undefined;
    const pending = this.fireTimers(
      () => this.timers.popProcessingTimeTimers(time),
      (due) => this.removeExpired(due),
    );
    return afterwards(pending, () => cleanupTimers.requestNextWakeup());
  }

  private removeExpired(due: readonly Timer[]): void {
    for (let i = 0; i < due.length; i++) {
      const timer = due[i] as Timer;
      this.backend.setCurrentKey(timer.key);
      if (timer.namespace === 0) this.left.removeBucket(timer.timestamp);
      else this.right.removeBucket(timer.timestamp);
    }
  }
}

export function validateRetention(name: string, retention: StateRetention): void {
  if (!Number.isSafeInteger(retention.ms) || retention.ms <= 0) {
    throw new ConfigError(
      `regular join "${name}": state retention must be a positive whole number of milliseconds, got ${String(retention.ms)}`,
    );
  }
  if (retention.timeDomain !== 'event' && retention.timeDomain !== 'processing') {
    throw new ConfigError(
      `regular join "${name}": state retention time domain must be 'event' or 'processing', got '${String(retention.timeDomain)}'`,
    );
  }
}
