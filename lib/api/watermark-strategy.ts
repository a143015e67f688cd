import { ConfigError } from '../core/index.ts';

/** Tracks event time and says how far the watermark may advance. One instance per split (or per subtask). */
export interface WatermarkGenerator<T> {
  onEvent(value: T, timestamp: number): void;
  /** The watermark to emit now; -Infinity while nothing is known. Must never go backwards. */
  currentWatermark(): number;
  /**
   * Plain data from which `restoreState` can continue (checkpoints). Without it a restored generator starts
   * afresh, and records that were late before a failure may be on time after it.
   */
  snapshotState?(): unknown;
  restoreState?(state: unknown): void;
}

/** Extracts the event time (epoch ms) of a record; `recordTimestamp` is the timestamp it already carries. */
export type TimestampAssigner<T> = (value: T, recordTimestamp: number) => number;

/**
 * How records get event timestamps and how watermarks are generated. Immutable: `with*` methods return a new
 * strategy.
 */
export class WatermarkStrategy<T> {
  private constructor(
    readonly createGenerator: () => WatermarkGenerator<T>,
    readonly timestampAssigner: TimestampAssigner<T> | undefined,
    /**
     * Inputs without records for this long are marked idle and stop holding back the watermark. On a source, the
     * time counts only while the split is caught up (its reader has no data available): a split that is behind or
     * slow to answer never goes idle (SourceReader.caughtUp).
     */
    readonly idleTimeoutMs: number | undefined,
  ) {}

  /** Watermark = highest timestamp seen - maxOutOfOrdernessMs - 1: records up to that much late are on time. */
  static forBoundedOutOfOrderness<T>(maxOutOfOrdernessMs: number): WatermarkStrategy<T> {
    if (!Number.isFinite(maxOutOfOrdernessMs) || maxOutOfOrdernessMs < 0) {
      throw new ConfigError(
        `forBoundedOutOfOrderness: maxOutOfOrdernessMs must be a finite number >= 0, got ${maxOutOfOrdernessMs}`,
      );
    }
    return new WatermarkStrategy<T>(() => new BoundedOutOfOrdernessGenerator<T>(maxOutOfOrdernessMs), undefined, undefined);
  }

  /** Timestamps never decrease: watermark = highest timestamp seen - 1. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(() => new BoundedOutOfOrdernessGenerator<T>(0), undefined, undefined);
  }

  /** A custom generator; `create` is called once per split or subtask. */
  static forGenerator<T>(create: () => WatermarkGenerator<T>): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(create, undefined, undefined);
  }

  /** Timestamps are assigned but no watermark is emitted until the end of input. */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(() => ({ onEvent() {}, currentWatermark: () => Number.NEGATIVE_INFINITY }), undefined, undefined);
  }

  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(this.createGenerator, assigner, this.idleTimeoutMs);
  }

  /**
   * A split (or input) that had no record for `idleTimeoutMs` goes idle: the watermark advances without it. A source
   * split must also have been caught up all that time (nothing available to read: a Kinesis shard at its tip, a
   * followed file at its end), so a slow or lagging split is never declared idle and its records never become late
   * for that reason.
   */
  withIdleness(idleTimeoutMs: number): WatermarkStrategy<T> {
    if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0) {
      throw new ConfigError(`withIdleness: idleTimeoutMs must be a positive number, got ${idleTimeoutMs}`);
    }
    return new WatermarkStrategy<T>(this.createGenerator, this.timestampAssigner, idleTimeoutMs);
  }
}

class BoundedOutOfOrdernessGenerator<T> implements WatermarkGenerator<T> {
  private maxTimestamp = Number.NEGATIVE_INFINITY;
  constructor(private readonly delay: number) {}
  onEvent(_value: T, timestamp: number): void {
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
  }
  currentWatermark(): number {
    return this.maxTimestamp - this.delay - 1;
  }
  snapshotState(): unknown {
    return this.maxTimestamp;
  }
  restoreState(state: unknown): void {
    if (typeof state === 'number') this.maxTimestamp = Math.max(this.maxTimestamp, state);
  }
}
