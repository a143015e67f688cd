import type { Key } from '../../core/index.ts';
import type { Timer } from '../../state/timers/timer-service.ts';
import type { WindowContents } from './window-contents.ts';
import type { WindowLogic } from './window-logic.ts';
import { greatestCommonDivisor, windowStart } from './window-math.ts';
import type { WindowTimers } from './window-timers.ts';

export interface FixedWindowParams {
  readonly sizeMs: number;
  /** Equal to sizeMs for tumbling windows. */
  readonly slideMs: number;
  readonly offsetMs: number;
  readonly isEventTime: boolean;
  readonly allowedLatenessMs: number;
}

/**
 * Tumbling and sliding windows, computed by slicing: state is kept per slice of gcd(size, slide) ms (a tumbling
 * window is one slice), each element updates exactly one slice, and a window merges its slices when it fires.
 *
 * Timers are per window (namespace = window start): a fire timer at end - 1 and, with allowed lateness, a
 * cleanup timer at end - 1 + lateness. Both are registered when one of the window's slices gets its first
 * element; a window that could still receive elements then always has a slice with state. Slice s is purged by
 * the cleanup of the latest window containing it (the one starting in (s - slide, s]), after which no window can
 * read or receive it. This makes firing, late firing and purging identical to windows materialised separately.
 */
export class SlicedWindowLogic<K extends Key> implements WindowLogic<K> {
  private readonly size: number;
  private readonly slide: number;
  private readonly offset: number;
  private readonly pane: number;
  private readonly lateness: number;
  private readonly isEventTime: boolean;

  constructor(
    params: FixedWindowParams,
    private readonly contents: WindowContents<K>,
    private readonly timers: WindowTimers,
  ) {
    this.size = params.sizeMs;
    this.slide = params.slideMs;
    this.offset = params.offsetMs;
    this.pane = greatestCommonDivisor(params.sizeMs, params.slideMs);
    this.lateness = params.isEventTime ? params.allowedLatenessMs : 0;
    this.isEventTime = params.isEventTime;
  }

  processElement(value: unknown, time: number, key: K, watermark: number): boolean {
    const pane = this.pane;
    const sliceStart = windowStart(time, this.offset, pane);
    const lastStart = pane === this.slide ? sliceStart : windowStart(sliceStart, this.offset, this.slide);
    // The latest window of the element is the last to become late.
    if (this.isEventTime && lastStart + this.size - 1 + this.lateness <= watermark) return false;
    const contents = this.contents;
    contents.setNamespace(sliceStart);
    if (contents.add(value)) this.registerTimers(key, sliceStart, lastStart, watermark);
    // Cheap pre-check: every window of this slice ends at or after the slice.
    if (this.isEventTime && sliceStart + pane - 1 <= watermark) this.fireLateWindows(key, sliceStart, lastStart, watermark);
    return true;
  }

  onTimer(timer: Timer): void {
    const start = timer.namespace as number;
    const maxTimestamp = start + this.size - 1;
    if (timer.timestamp === maxTimestamp) this.fireWindow(timer.key as K, start);
    const cleanupTime = maxTimestamp + this.lateness;
    if (timer.timestamp === cleanupTime) {
      // This window is the latest one containing the slices of its first `slide` ms.
      const contents = this.contents;
      const end = start + this.slide;
      for (let slice = start; slice < end; slice += this.pane) {
        contents.setNamespace(slice);
        contents.clear();
      }
    }
  }

  /** Timers of the windows containing a new slice that are not late, latest window first. */
  private registerTimers(key: K, sliceStart: number, lastStart: number, watermark: number): void {
    const { size, slide, lateness, timers } = this;
    for (let start = lastStart; start + size > sliceStart; start -= slide) {
      const maxTimestamp = start + size - 1;
      if (this.isEventTime && maxTimestamp + lateness <= watermark) break;
      timers.registerWindow(key, start, maxTimestamp, lateness, watermark);
    }
  }

  /** Re-fires, latest window first (Flink's order), the windows already fired but within allowed lateness. */
  private fireLateWindows(key: K, sliceStart: number, lastStart: number, watermark: number): void {
    const { size, slide, lateness } = this;
    for (let start = lastStart; start + size > sliceStart; start -= slide) {
      const maxTimestamp = start + size - 1;
      if (maxTimestamp > watermark) continue;
      if (maxTimestamp + lateness <= watermark) break;
      this.fireWindow(key, start);
    }
  }

  private fireWindow(key: K, start: number): void {
    const end = start + this.size;
    this.contents.fire(key, { start, end }, start, this.pane, end);
  }
}
