import { ConfigError, type Key } from '../core/index.ts';
import type { Namespace } from './keyed-state.ts';

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

export type TimerDomain = 'event' | 'processing';

/*
 * Backends that keep timers off the heap (RocksDB) store them as keyed state of their key, so they travel with the
 * key through checkpoints, state files and rescaling like any other state: one entry per (key, namespace) under
 * one of these reserved state names, whose value is the ascending array of that entry's timestamps. A backend that
 * restores such files but keeps timers on the heap (memory) hands them to its timer service instead
 * (KeyedStateBackend.takeRestoredTimers).
 */
export const EVENT_TIMER_STATE = '__sluice.timers.event';
export const PROCESSING_TIMER_STATE = '__sluice.timers.processing';

export function timerStateName(domain: TimerDomain): string {
  return domain === 'event' ? EVENT_TIMER_STATE : PROCESSING_TIMER_STATE;
}

export function timerDomainOfState(name: string): TimerDomain | undefined {
  if (name === EVENT_TIMER_STATE) return 'event';
  if (name === PROCESSING_TIMER_STATE) return 'processing';
  return undefined;
}

/** A timer's timestamp as given by an operator or user function: any number but NaN (ConfigError otherwise). */
export function checkTimerTimestamp(timestamp: number): number {
  if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) {
    throw new ConfigError(`a timer timestamp must be a number (epoch milliseconds), got ${String(timestamp)}`);
  }
  return timestamp;
}

/** The timestamps of a stored timer entry; anything else is a damaged or foreign value. */
export function storedTimestamps(value: unknown): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const t of value) if (typeof t !== 'number' || Number.isNaN(t)) return undefined;
  return value as number[];
}

/**
 * Collects timers found in restored keyed state, per key, where a later visit of a key replaces what an earlier
 * one said (state files apply in order), and returns them grouped by key group in firing order.
 */
export class RestoredTimerCollector {
  private readonly byKey = new Map<Key, { keyGroup: number; event: Timer[]; processing: Timer[] }>();

  /** The key's state was replaced (a later file's row): forget its earlier timers. */
  resetKey(key: Key): void {
    this.byKey.delete(key);
  }

  add(domain: TimerDomain, keyGroup: number, key: Key, namespace: Namespace, timestamps: readonly number[]): void {
    let entry = this.byKey.get(key);
    if (entry === undefined) this.byKey.set(key, (entry = { keyGroup, event: [], processing: [] }));
    const list = domain === 'event' ? entry.event : entry.processing;
    for (const timestamp of timestamps) list.push({ timestamp, key, namespace });
  }

  take(): TimerKeyGroupSnapshot[] {
    const groups = new Map<number, TimerKeyGroupSnapshot>();
    for (const entry of this.byKey.values()) {
      let group = groups.get(entry.keyGroup);
      if (group === undefined) groups.set(entry.keyGroup, (group = { keyGroup: entry.keyGroup, eventTimers: [], processingTimers: [] }));
      group.eventTimers.push(...entry.event);
      group.processingTimers.push(...entry.processing);
    }
    this.byKey.clear();
    const out = [...groups.values()].sort((a, b) => a.keyGroup - b.keyGroup);
    for (const group of out) {
      group.eventTimers.sort((a, b) => a.timestamp - b.timestamp);
      group.processingTimers.sort((a, b) => a.timestamp - b.timestamp);
    }
    return out;
  }
}
