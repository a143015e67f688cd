import { BID, type Bid, type NexmarkEvent } from '../model.ts';
import { Q7_WINDOW_MS } from '../queries/q7.ts';
import type { Baseline, BaselineFactory } from './baseline.ts';

interface Top {
  price: number;
  readonly bids: Bid[];
}

/** q7 by hand: per 10 s tumbling window, the highest price and the bids with it; emitted when the window closes. */
class HighestBid implements Baseline<Bid> {
  /** Window start -> its top bids, for windows the watermark has not closed. */
  private readonly windows = new Map<number, Top>();
  private watermark = Number.NEGATIVE_INFINITY;
  private currentStart = Number.NaN;
  private current: Top | undefined;

  processBatch(events: readonly NexmarkEvent[]): void {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind !== BID) continue;
      const start = e.dateTime - (e.dateTime % Q7_WINDOW_MS);
      let top = this.current;
      if (start !== this.currentStart) {
        // A bid for a window that has fired is late: dropped, as the window operator drops it.
        if (start + Q7_WINDOW_MS - 1 <= this.watermark) continue;
        top = this.windows.get(start);
        this.currentStart = start;
        if (top === undefined) {
          this.windows.set(start, (this.current = { price: e.price, bids: [e] }));
          continue;
        }
        this.current = top;
      }
      if (e.price > top!.price) {
        top!.price = e.price;
        top!.bids.length = 0;
        top!.bids.push(e);
      } else if (e.price === top!.price) {
        top!.bids.push(e);
      }
    }
  }

  advanceWatermark(watermark: number, out: Bid[]): void {
    this.watermark = watermark;
    for (const [start, top] of this.windows) {
      if (start + Q7_WINDOW_MS - 1 > watermark) continue;
      for (const bid of top.bids) out.push(bid);
      this.windows.delete(start);
      if (start === this.currentStart) {
        this.currentStart = Number.NaN;
        this.current = undefined;
      }
    }
  }
}

export const q7Baseline: BaselineFactory<Bid> = () => new HighestBid();
