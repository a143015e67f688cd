/**
 * A brute-force reference model of keyed event-time windows with Flink's WindowOperator semantics and default
 * EventTimeTrigger, written without any of the operator's code: every window is materialised separately as the
 * list of its elements, and every step is a scan over all live windows.
 *
 * Semantics modelled (per key; the watermark is the one in force when an element is processed):
 * - an element joins each of its windows unless the window is late (end - 1 + allowedLateness <= watermark);
 *   an element that joins no window and is itself late (timestamp + allowedLateness <= watermark) is late data;
 * - a window created while the watermark is below its end - 1 gets a fire timer: it fires once the watermark
 *   reaches end - 1. A window that receives an element while the watermark is at or past end - 1 fires at once;
 * - a window is purged when the watermark reaches end - 1 + allowedLateness;
 * - sessions: an element opens [t, t + gap); windows that overlap or touch merge (including late-allowed ones
 *   bridged by a late element). A merge replaces the fire timers of the merged sessions by one for the merged
 *   session if the watermark is still below its end - 1. An element whose own window is late but that overlaps an
 *   open session joins it. An element inside an existing session does not change its timers.
 * - when the watermark advances, due fires and purges run in timestamp order, a fire before a purge at the same time.
 *
 *   const model = runWindowModel({ assigner: { kind: 'tumbling', size: 10 }, allowedLateness: 0,
 *     keySelector: (v) => v.key, batches: [{ values, timestamps, watermark: 20 }, ...] });
 *   model.firings  // { key, window, elements (arrival order), timestamp: end - 1, cause }[] in emission order
 *   model.late     // { value, timestamp }[] in arrival order
 */
import type { TimeWindow } from '../../lib/contracts/functions.ts';
import type { Key } from '../../lib/core/index.ts';

export type ModelAssigner =
  | { readonly kind: 'tumbling'; readonly size: number; readonly offset?: number }
  | { readonly kind: 'sliding'; readonly size: number; readonly slide: number; readonly offset?: number }
  | { readonly kind: 'session'; readonly gap: number };

export interface ModelBatch<T> {
  readonly values: readonly T[];
  readonly timestamps: readonly number[];
  /** Watermark after this batch. A value below the current watermark leaves it unchanged. */
  readonly watermark: number;
}

export interface ModelFiring<T> {
  readonly key: Key;
  readonly window: TimeWindow;
  /** The window's elements in arrival order (an operator may present them in another order). */
  readonly elements: readonly T[];
  /** The result's timestamp: window.end - 1. */
  readonly timestamp: number;
  /** 'watermark': the watermark reached the window's end; 'element': a late element re-fired it. */
  readonly cause: 'watermark' | 'element';
}

export interface ModelLateRecord<T> {
  readonly value: T;
  readonly timestamp: number;
}

export interface WindowModelOptions<T> {
  readonly assigner: ModelAssigner;
  readonly allowedLateness: number;
  readonly keySelector: (value: T) => Key;
  readonly batches: readonly ModelBatch<T>[];
  /** @default -Infinity */
  readonly initialWatermark?: number;
}

export interface WindowModelResult<T> {
  readonly firings: ModelFiring<T>[];
  readonly late: ModelLateRecord<T>[];
}

interface Element<T> {
  readonly value: T;
  readonly seq: number;
}

interface LiveWindow<T> {
  start: number;
  end: number;
  elements: Element<T>[];
  hasFireTimer: boolean;
}

export function runWindowModel<T>(options: WindowModelOptions<T>): WindowModelResult<T> {
  const { assigner, allowedLateness: lateness, keySelector } = options;
  const live = new Map<Key, LiveWindow<T>[]>();
  const firings: ModelFiring<T>[] = [];
  const late: ModelLateRecord<T>[] = [];
  let watermark = options.initialWatermark ?? Number.NEGATIVE_INFINITY;
  let seq = 0;

  const fire = (key: Key, w: LiveWindow<T>, cause: ModelFiring<T>['cause']): void => {
    const elements = w.elements
      .slice()
      .sort((a, b) => a.seq - b.seq)
      .map((e) => e.value);
    firings.push({ key, window: { start: w.start, end: w.end }, elements, timestamp: w.end - 1, cause });
  };
  const isLate = (w: { end: number }): boolean => w.end - 1 + lateness <= watermark;

  const addToFixed = (key: Key, windows: LiveWindow<T>[], element: Element<T>, ts: number): boolean => {
    let added = false;
    for (const candidate of fixedWindowsOf(assigner, ts)) {
      if (isLate(candidate)) continue;
      let w = windows.find((x) => x.start === candidate.start);
      if (w === undefined) {
        w = { ...candidate, elements: [], hasFireTimer: candidate.end - 1 > watermark };
        windows.push(w);
      }
      w.elements.push(element);
      added = true;
      if (w.end - 1 <= watermark) fire(key, w, 'element');
    }
    return added;
  };

  const addToSession = (key: Key, windows: LiveWindow<T>[], element: Element<T>, ts: number, gap: number): boolean => {
    const own = { start: ts, end: ts + gap };
    const overlapping = windows.filter((w) => w.start <= own.end && w.end >= own.start);
    if (overlapping.length === 0) {
      if (isLate(own)) return false;
      const w: LiveWindow<T> = { ...own, elements: [element], hasFireTimer: own.end - 1 > watermark };
      windows.push(w);
      if (w.end - 1 <= watermark) fire(key, w, 'element');
      return true;
    }
    const start = Math.min(own.start, ...overlapping.map((w) => w.start));
    const end = Math.max(own.end, ...overlapping.map((w) => w.end));
    let target: LiveWindow<T>;
    const single = overlapping[0] as LiveWindow<T>;
    if (overlapping.length === 1 && single.start === start && single.end === end) {
      target = single;
    } else {
      target = {
        start,
        end,
        elements: overlapping.flatMap((w) => w.elements),
        hasFireTimer: end - 1 > watermark,
      };
      for (const w of overlapping) windows.splice(windows.indexOf(w), 1);
      windows.push(target);
    }
    target.elements.push(element);
    if (target.end - 1 <= watermark) fire(key, target, 'element');
    return true;
  };

  const advance = (to: number): void => {
    if (!(to > watermark)) return;
    const events: { time: number; order: number; key: Key; w: LiveWindow<T> }[] = [];
    for (const [key, windows] of live) {
      for (const w of windows) {
        if (w.hasFireTimer && w.end - 1 <= to) events.push({ time: w.end - 1, order: 0, key, w });
        if (w.end - 1 + lateness <= to) events.push({ time: w.end - 1 + lateness, order: 1, key, w });
      }
    }
    events.sort((a, b) => a.time - b.time || a.order - b.order);
    for (const e of events) {
      if (e.order === 0) {
        e.w.hasFireTimer = false;
        fire(e.key, e.w, 'watermark');
      } else {
        const windows = live.get(e.key) as LiveWindow<T>[];
        windows.splice(windows.indexOf(e.w), 1);
      }
    }
    watermark = to;
  };

  for (const batch of options.batches) {
    for (let i = 0; i < batch.values.length; i++) {
      const value = batch.values[i] as T;
      const ts = batch.timestamps[i] as number;
      const key = keySelector(value);
      let windows = live.get(key);
      if (windows === undefined) {
        windows = [];
        live.set(key, windows);
      }
      const element = { value, seq: seq++ };
      const added =
        assigner.kind === 'session'
          ? addToSession(key, windows, element, ts, assigner.gap)
          : addToFixed(key, windows, element, ts);
      if (!added && ts + lateness <= watermark) late.push({ value, timestamp: ts });
    }
    advance(batch.watermark);
  }
  return { firings, late };
}

/** Windows containing `ts`, latest start first (the order in which Flink's sliding assigner lists them). */
function fixedWindowsOf(assigner: ModelAssigner, ts: number): TimeWindow[] {
  if (assigner.kind === 'session') throw new Error('sessions have no fixed windows');
  const size = assigner.size;
  const slide = assigner.kind === 'sliding' ? assigner.slide : assigner.size;
  const offset = assigner.offset ?? 0;
  // Window starts are offset + k * slide; keep those with start <= ts < start + size.
  const windows: TimeWindow[] = [];
  const kMin = Math.ceil((ts - size + 1 - offset) / slide);
  const kMax = Math.floor((ts - offset) / slide);
  for (let k = kMax; k >= kMin; k--) {
    const start = offset + k * slide;
    windows.push({ start, end: start + size });
  }
  return windows;
}

/** The firings grouped by key, each key's list in emission order. */
export function firingsByKey<T>(firings: readonly ModelFiring<T>[]): Map<Key, ModelFiring<T>[]> {
  const byKey = new Map<Key, ModelFiring<T>[]>();
  for (const f of firings) {
    let list = byKey.get(f.key);
    if (list === undefined) {
      list = [];
      byKey.set(f.key, list);
    }
    list.push(f);
  }
  return byKey;
}
