import type { PollResult, Source, SourceReader, SourceSplit } from 'sluice';
import { wallClock } from '../nexmark/timing.ts';
import type { LatencyRecord } from './record.ts';
import { report } from './reports.ts';
import { FixedRateSchedule } from './schedule.ts';

export interface FixedRateOptions {
  /** Records per second over all subtasks; 0: as fast as the pipeline takes them (a throughput run). */
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly keys: number;
}

interface FixedRateSplit extends SourceSplit {
  readonly index: number;
  readonly count: number;
}

/**
 * A bounded source that emits on a fixed schedule (see FixedRateSchedule): each subtask has rate / parallelism
 * records per second, from its first poll for warm-up + measured seconds, staggered so that the subtasks take turns.
 * With rate 0 it emits a full batch at every poll and reports how many records it emitted after the warm-up.
 */
export function fixedRateSource(options: FixedRateOptions): Source<LatencyRecord, FixedRateSplit> {
  return {
    name: 'fixed-rate',
    bounded: true,
    createSplits({ parallelism }): FixedRateSplit[] {
      return Array.from({ length: parallelism }, (_, index) => ({ id: `fixed-rate-${index}`, index, count: parallelism }));
    },
    createReader(splits: FixedRateSplit[]): SourceReader<LatencyRecord, FixedRateSplit> {
      const split = splits[0];
      if (split === undefined) return { poll: () => ({ kind: 'end' }), currentSplits: () => [], close() {} };
      return options.rate > 0 ? new ScheduledReader(split, options) : new UnthrottledReader(split, options);
    },
  };
}

class ScheduledReader implements SourceReader<LatencyRecord, FixedRateSplit> {
  private schedule: FixedRateSchedule | undefined;
  private next = 0;
  private measuredFrom = 0;

  constructor(
    private readonly split: FixedRateSplit,
    private readonly options: FixedRateOptions,
  ) {}

  poll(maxRecords: number): PollResult<LatencyRecord> {
    const now = wallClock();
    let schedule = this.schedule;
    if (schedule === undefined) {
      const rate = this.options.rate / this.split.count;
      // Subtask i starts i / parallelism of an interval later: together they emit at even intervals.
      const start = now + this.split.index / this.options.rate * 1000;
      const total = Math.floor((this.options.warmupSeconds + this.options.seconds) * rate);
      this.schedule = schedule = new FixedRateSchedule(start, rate, total);
      this.measuredFrom = start + this.options.warmupSeconds * 1000;
    }
    if (this.next >= schedule.total) return { kind: 'end' };
    const n = Math.min(schedule.dueBy(now) - this.next, Math.max(1, maxRecords));
    if (n <= 0) {
      const wait = schedule.intendedTime(this.next) - now;
      // A timer wakes a millisecond late at best: closer than that, poll again at the next turn of the event loop
      // (an empty batch) rather than sleep past the due time.
      if (wait >= 1) return { kind: 'wait', retryAfterMs: Math.floor(wait) };
      return { kind: 'batch', batch: { values: [], timestamps: [], split: this.split.id } };
    }
    const values = new Array<LatencyRecord>(n);
    const timestamps = new Array<number>(n);
    const keys = this.options.keys;
    for (let i = 0; i < n; i++) {
      const index = this.next + i;
      const stamp = schedule.intendedTime(index);
      values[i] = { key: (index * this.split.count + this.split.index) % keys, stamp, measured: stamp >= this.measuredFrom };
      timestamps[i] = Math.floor(stamp);
    }
    this.next += n;
    return { kind: 'batch', batch: { values, timestamps, split: this.split.id } };
  }

  currentSplits(): FixedRateSplit[] {
    // Positions are not kept: a latency run is not restarted from a checkpoint.
    return this.next >= (this.schedule?.total ?? 1) ? [] : [this.split];
  }

  close(): void {}
}

class UnthrottledReader implements SourceReader<LatencyRecord, FixedRateSplit> {
  private startedAt = 0;
  private emitted = 0;
  private measured = 0;
  private done = false;

  constructor(
    private readonly split: FixedRateSplit,
    private readonly options: FixedRateOptions,
  ) {}

  poll(maxRecords: number): PollResult<LatencyRecord> {
    const now = wallClock();
    if (this.startedAt === 0) this.startedAt = now;
    const measuredFrom = this.startedAt + this.options.warmupSeconds * 1000;
    const endAt = measuredFrom + this.options.seconds * 1000;
    if (now >= endAt) {
      if (!this.done) {
        this.done = true;
        report({ kind: 'throughput', events: this.measured, seconds: this.options.seconds });
      }
      return { kind: 'end' };
    }
    const n = Math.max(1, maxRecords);
    const values = new Array<LatencyRecord>(n);
    const timestamps = new Array<number>(n);
    const measured = now >= measuredFrom;
    for (let i = 0; i < n; i++) {
      const index = this.emitted + i;
      values[i] = { key: (index * this.split.count + this.split.index) % this.options.keys, stamp: now, measured };
      timestamps[i] = Math.floor(now);
    }
    this.emitted += n;
    if (measured) this.measured += n;
    return { kind: 'batch', batch: { values, timestamps, split: this.split.id } };
  }

  currentSplits(): FixedRateSplit[] {
    return this.done ? [] : [this.split];
  }

  close(): void {}
}
