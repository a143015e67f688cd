import type { Key, KeyGroupRange } from '../../core/index.ts';
import type { Namespace, Timer, TimerKeyGroupSnapshot } from '../index.ts';

export type { Timer, TimerKeyGroupSnapshot };

/**
 * Keyed timers of one operator subtask, in event time and processing time. Registering the same
 * (timestamp, key, namespace) twice keeps one timer. Timers are kept per key group so they can be snapshotted and
 * redistributed with keyed state.
 */
export interface InternalTimerService {
  registerEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void;
  deleteEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void;
  registerProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void;
  deleteProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void;

  /**
   * Removes and returns, in timestamp order, event-time timers with timestamp <= watermark: all of them, or one
   * round of them for services that keep timers off the heap. Callers pop again until an empty round (which also
   * fires timers registered meanwhile at or below the watermark).
   */
  popEventTimeTimers(watermark: number): Timer[];
  /** As popEventTimeTimers, for processing-time timers with timestamp <= time. */
  popProcessingTimeTimers(time: number): Timer[];
  /** Earliest pending processing-time timer, or undefined; the task schedules its wake-up with it. */
  nextProcessingTime(): number | undefined;
  /** Earliest pending event-time timer, or undefined. */
  nextEventTime(): number | undefined;

  eventTimerCount(): number;
  processingTimerCount(): number;

  /**
   * Copies every pending timer, grouped by key group. Services that keep timers in the keyed state backend (RocksDB)
   * return none: their timers are part of the keyed state snapshot.
   */
  snapshot(): TimerKeyGroupSnapshot[];
  /**
   * Adds the timers of the key groups in `range`; others are ignored (rescaling). Called after the keyed state
   * backend restored, with the timers of heap snapshots and those the backend found in state files.
   */
  restore(snapshot: readonly TimerKeyGroupSnapshot[], range: KeyGroupRange): void;
}
