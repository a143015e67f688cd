import {
  ConfigError,
  keyGroupOf,
  keyGroupRangeContains,
  type Key,
  type KeyGroupFunction,
  type KeyGroupRange,
} from '../../core/index.ts';
import { checkTimerTimestamp, type Namespace } from '../index.ts';
import { TimerQueue } from './timer-queue.ts';
import type { InternalTimerService, Timer, TimerKeyGroupSnapshot } from './timer-service.ts';

export type { TimerKeyGroupSnapshot };

export interface HeapTimerServiceOptions {
  readonly maxParallelism: number;
  /** Key to key group, as the operator's keyed state computes it. @default keyGroupOf (murmur) */
  readonly keyGroupOf?: KeyGroupFunction;
}

/**
 * Timers on the JS heap: per time domain a TimerQueue (timestamp buckets in a min-heap). Timers fire in timestamp
 * order, and in registration order within a timestamp (after a restore: key-group order, then the order they had
 * within their key group). Key groups are computed only when snapshotting, so
 * registering a timer never hashes its key.
 */
export class HeapTimerService implements InternalTimerService {
  private readonly maxParallelism: number;
  private readonly keyGroupOf: KeyGroupFunction;
  private readonly eventTimers = new TimerQueue();
  private readonly processingTimers = new TimerQueue();

  constructor(options: HeapTimerServiceOptions) {
    if (!Number.isInteger(options.maxParallelism) || options.maxParallelism < 1) {
      throw new ConfigError(`maxParallelism must be a positive integer, got ${options.maxParallelism}`);
    }
    this.maxParallelism = options.maxParallelism;
    this.keyGroupOf = options.keyGroupOf ?? keyGroupOf;
  }

  registerEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.eventTimers.add(key, namespace, checkTimerTimestamp(timestamp));
  }

  deleteEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.eventTimers.delete(key, namespace, timestamp);
  }

  registerProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.processingTimers.add(key, namespace, checkTimerTimestamp(timestamp));
  }

  deleteProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.processingTimers.delete(key, namespace, timestamp);
  }

  popEventTimeTimers(watermark: number): Timer[] {
    const out: Timer[] = [];
    this.eventTimers.popUpTo(watermark, out);
    return out;
  }

  popProcessingTimeTimers(time: number): Timer[] {
    const out: Timer[] = [];
    this.processingTimers.popUpTo(time, out);
    return out;
  }

  nextProcessingTime(): number | undefined {
    return this.processingTimers.peek();
  }

  nextEventTime(): number | undefined {
    return this.eventTimers.peek();
  }

  eventTimerCount(): number {
    return this.eventTimers.size;
  }

  processingTimerCount(): number {
    return this.processingTimers.size;
  }

  /** Pending timers grouped by key group (ascending), each list in firing order. Timers are immutable and shared. */
  snapshot(): TimerKeyGroupSnapshot[] {
    const groups = new Map<number, TimerKeyGroupSnapshot>();
    const groupOf = (timer: Timer): TimerKeyGroupSnapshot => {
      const keyGroup = this.keyGroupOf(timer.key, this.maxParallelism);
      let group = groups.get(keyGroup);
      if (group === undefined) {
        group = { keyGroup, eventTimers: [], processingTimers: [] };
        groups.set(keyGroup, group);
      }
      return group;
    };
    for (const timer of this.eventTimers.toSortedArray()) groupOf(timer).eventTimers.push(timer);
    for (const timer of this.processingTimers.toSortedArray()) groupOf(timer).processingTimers.push(timer);
    return [...groups.values()].sort((a, b) => a.keyGroup - b.keyGroup);
  }

  /**
   * Adds the timers of the key groups in `range` (rescaling hands every subtask all snapshots; each keeps its own).
   * Timers already pending are kept; equal ones are deduplicated.
   */
  restore(snapshot: readonly TimerKeyGroupSnapshot[], range: KeyGroupRange): void {
    for (const group of snapshot) {
      if (!keyGroupRangeContains(range, group.keyGroup)) continue;
      for (const t of group.eventTimers) this.eventTimers.add(t.key, t.namespace, t.timestamp);
      for (const t of group.processingTimers) this.processingTimers.add(t.key, t.namespace, t.timestamp);
    }
  }

  clear(): void {
    this.eventTimers.clear();
    this.processingTimers.clear();
  }
}

