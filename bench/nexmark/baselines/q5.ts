import { BID, type NexmarkEvent } from '../model.ts';
import { Q5_SLIDE_MS, Q5_WINDOW_MS, type AuctionCount } from '../queries/q5.ts';
import type { Baseline, BaselineFactory } from './baseline.ts';

const SLICES_PER_WINDOW = Q5_WINDOW_MS / Q5_SLIDE_MS;

/**
 * q5 by hand, by slicing: bids are counted per auction in 2 s slices (one Map update per bid); when the watermark
 * passes a window's end, the counts of its 5 slices are added up and its leaders emitted. A bid counts only in the
 * windows that have not fired yet (the window operator drops a record for each window it is late for).
 */
class HotItems implements Baseline<AuctionCount> {
  /** Slice start -> auction -> bids. Slices whose last window has fired are deleted. */
  private readonly slices = new Map<number, Map<number, number>>();
  /** Lowest window start that may still have to fire; +Infinity when none. */
  private nextWindow = Number.POSITIVE_INFINITY;
  /** Start of the last window fired. */
  private lastFired = Number.NEGATIVE_INFINITY;
  private watermark = Number.NEGATIVE_INFINITY;
  private latestSlice = Number.NEGATIVE_INFINITY;
  private currentStart = Number.NaN;
  private current: Map<number, number> | undefined;

  processBatch(events: readonly NexmarkEvent[]): void {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind !== BID) continue;
      const time = e.dateTime;
      const sliceStart = time - (time % Q5_SLIDE_MS);
      let counts = this.current;
      if (sliceStart !== this.currentStart) {
        // Late for every window it belongs to (the last one starts at the slice): dropped.
        if (sliceStart + Q5_WINDOW_MS - 1 <= this.watermark) continue;
        counts = this.sliceAt(sliceStart);
      }
      counts!.set(e.auction, (counts!.get(e.auction) ?? 0) + 1);
    }
  }

  private sliceAt(sliceStart: number): Map<number, number> {
    let counts = this.slices.get(sliceStart);
    if (counts === undefined) {
      this.slices.set(sliceStart, (counts = new Map()));
      const firstWindow = Math.max(sliceStart - Q5_WINDOW_MS + Q5_SLIDE_MS, this.lastFired + Q5_SLIDE_MS);
      if (firstWindow < this.nextWindow) this.nextWindow = firstWindow;
      if (sliceStart > this.latestSlice) this.latestSlice = sliceStart;
    }
    this.currentStart = sliceStart;
    this.current = counts;
    return counts;
  }

  advanceWatermark(watermark: number, out: AuctionCount[]): void {
    this.watermark = watermark;
    while (this.nextWindow !== Number.POSITIVE_INFINITY && this.nextWindow + Q5_WINDOW_MS - 1 <= watermark) {
      const start = this.nextWindow;
      this.fire(start, out);
      this.lastFired = start;
      this.slices.delete(start);
      if (start === this.currentStart) {
        this.currentStart = Number.NaN;
        this.current = undefined;
      }
      this.nextWindow = start + Q5_SLIDE_MS > this.latestSlice ? Number.POSITIVE_INFINITY : start + Q5_SLIDE_MS;
      if (this.slices.size === 0) this.nextWindow = Number.POSITIVE_INFINITY;
    }
  }

  /** Adds up the window's slices and emits the auctions with the highest count. */
  private fire(start: number, out: AuctionCount[]): void {
    let total: Map<number, number> | undefined;
    for (let k = 0; k < SLICES_PER_WINDOW; k++) {
      const slice = this.slices.get(start + k * Q5_SLIDE_MS);
      if (slice === undefined) continue;
      if (total === undefined) total = new Map(slice);
      else for (const [auction, count] of slice) total.set(auction, (total.get(auction) ?? 0) + count);
    }
    if (total === undefined) return;
    let max = 0;
    for (const count of total.values()) if (count > max) max = count;
    const windowEnd = start + Q5_WINDOW_MS;
    for (const [auction, count] of total) if (count === max) out.push({ auction, count, windowStart: start, windowEnd });
  }
}

export const q5Baseline: BaselineFactory<AuctionCount> = () => new HotItems();
