import type { Key, KeyGroupRange } from '../core/index.ts';
import type { Namespace } from '../state/index.ts';

/** A timer of a keyed operator: fires for `key` and `namespace` once time reaches `timestamp`. */
export interface Timer {
  readonly timestamp: number;
  readonly key: Key;
  readonly namespace: Namespace;
}

/** The pending timers of one key group, as plain data (the unit of snapshots and redistribution). */
export interface TimerKeyGroupSnapshot {
  readonly keyGroup: number;
  readonly eventTimers: Timer[];
  readonly processingTimers: Timer[];
}

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

  /** Removes and returns, in timestamp order, the event-time timers with timestamp <= watermark. */
  popEventTimeTimers(watermark: number): Timer[];
  /** Removes and returns, in timestamp order, the processing-time timers with timestamp <= time. */
  popProcessingTimeTimers(time: number): Timer[];
  /** Earliest pending processing-time timer, or undefined; the task schedules its wake-up with it. */
  nextProcessingTime(): number | undefined;
  /** Earliest pending event-time timer, or undefined. */
  nextEventTime(): number | undefined;

  eventTimerCount(): number;
  processingTimerCount(): number;

  /** Copies every pending timer, grouped by key group. */
  snapshot(): TimerKeyGroupSnapshot[];
  /** Adds the timers of the key groups in `range`; others are ignored (rescaling). */
  restore(snapshot: readonly TimerKeyGroupSnapshot[], range: KeyGroupRange): void;
}
