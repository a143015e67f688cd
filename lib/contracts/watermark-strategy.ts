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
 * Default drift of watermark alignment for sources that align by default (file and Kinesis): 30 s, as in many Flink
 * deployments. It is an amount of event time, so it bounds the window state that a fast split can pile up (about
 * drift / window size windows per key) whatever the window size, and it is far above the out-of-orderness of
 * typical inputs, so splits of a live stream that are merely a few seconds apart are never paused.
 */
export const DEFAULT_MAX_ALLOWED_DRIFT_MS = 30_000;
/**
 * Default period of the alignment reports: how often a split's progress reaches the others. Lower than Flink's 1 s
 * because the reports stay in one process (a message between threads, not an RPC).
 */
export const DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS = 200;

/** Watermark alignment of source splits (see WatermarkStrategy.withWatermarkAlignment). */
export interface WatermarkAlignment {
  /** Splits of all sources with the same group are aligned with each other. */
  readonly group: string;
  /** How far (event-time ms) a split's watermark may run ahead of the slowest split of the group. */
  readonly maxAllowedDriftMs: number;
  /** How often source subtasks report their watermark and learn the group's slowest one. */
  readonly updateIntervalMs: number;
}

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
    /**
     * Watermark alignment of the source's splits: undefined leaves it to the source (the file and Kinesis sources
     * align by default, with DEFAULT_MAX_ALLOWED_DRIFT_MS), null turns it off.
     */
    readonly alignment?: WatermarkAlignment | null,
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
    return new WatermarkStrategy<T>(this.createGenerator, assigner, this.idleTimeoutMs, this.alignment);
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
    return new WatermarkStrategy<T>(this.createGenerator, this.timestampAssigner, idleTimeoutMs, this.alignment);
  }

  /**
   * Watermark alignment (as Flink's FLIP-182/217), for strategies given to `env.fromSource`: a split whose watermark
   * is more than `maxAllowedDriftMs` ahead of the slowest split of `group` (over every source and subtask with that
   * group) is paused, not read, until the slowest catches up. This bounds the state that windows of a fast split
   * pile up while downstream operators wait for the slow one. Idle and finished splits do not hold the others
   * back; a paused split is not idle.
   * @param updateIntervalMs how often subtasks share their progress. @default DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS
   */
  withWatermarkAlignment(
    group: string,
    maxAllowedDriftMs: number,
    updateIntervalMs: number = DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS,
  ): WatermarkStrategy<T> {
    if (typeof group !== 'string' || group.length === 0) {
      throw new ConfigError('withWatermarkAlignment: group must be a non-empty string');
    }
    if (!Number.isSafeInteger(maxAllowedDriftMs) || maxAllowedDriftMs < 0) {
      throw new ConfigError(`withWatermarkAlignment: maxAllowedDriftMs must be an integer >= 0, got ${maxAllowedDriftMs}`);
    }
    if (!Number.isSafeInteger(updateIntervalMs) || updateIntervalMs <= 0) {
      throw new ConfigError(`withWatermarkAlignment: updateIntervalMs must be a positive integer, got ${updateIntervalMs}`);
    }
    return new WatermarkStrategy<T>(this.createGenerator, this.timestampAssigner, this.idleTimeoutMs, {
      group,
      maxAllowedDriftMs,
      updateIntervalMs,
    });
  }

  /** No watermark alignment, even for sources that align by default: every split is read as fast as it can be. */
  withoutWatermarkAlignment(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(this.createGenerator, this.timestampAssigner, this.idleTimeoutMs, null);
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
