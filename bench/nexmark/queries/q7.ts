import {
  valueState,
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type KeyedRuntimeContext,
  type OnTimerContext,
  type ProcessContext,
  type ProcessFunction,
  type ValueState,
} from 'sluice';
import type { Bid } from '../model.ts';
import { bids } from './event-streams.ts';
import type { NexmarkQuery } from './query.ts';

export const Q7_WINDOW_MS = 10_000;

/** Start of the epoch-aligned tumbling window containing `time`. */
function windowStartOf(time: number): number {
  return time - (((time % Q7_WINDOW_MS) + Q7_WINDOW_MS) % Q7_WINDOW_MS);
}

/**
 * First phase, chained to the source (no shuffle): drops each bid whose price is below the highest price this
 * subtask has already seen in the bid's window. The window's top bids always pass (ties too: equal prices pass),
 * so only a handful of candidates per window and subtask cross to the second phase instead of every bid. The
 * running maxima are kept in memory, not in state: after a restore they start empty and let more bids through,
 * which changes nothing downstream.
 */
class LocalTopFilter implements ProcessFunction<Bid, Bid> {
  private maxima!: Map<number, number>;

  open(): void {
    this.maxima = new Map();
  }

  processElement(bid: Bid, ctx: ProcessContext, out: Collector<Bid>): void {
    const start = windowStartOf(ctx.timestamp);
    const max = this.maxima.get(start);
    if (max !== undefined && bid.price < max) return;
    if (max === undefined) {
      this.maxima.set(start, bid.price);
      // Forget windows the watermark has closed.
      const watermark = ctx.currentWatermark();
      for (const s of this.maxima.keys()) if (s + Q7_WINDOW_MS - 1 <= watermark) this.maxima.delete(s);
    } else if (bid.price > max) {
      this.maxima.set(start, bid.price);
    }
    out.collect(bid);
  }
}

/** The highest price of a window and every bid with it. Never mutated (state values are shared with snapshots). */
interface TopBids {
  readonly price: number;
  readonly bids: readonly Bid[];
}

const topDescriptor = valueState<TopBids>('window-top-bids');

/**
 * Second phase, keyed by window start: the window's top bids, emitted when the watermark passes its end (an
 * event-time timer, as a window fires). Bids of a window that has already fired are late and dropped, as the
 * window operator drops them without allowed lateness.
 */
class WindowTop implements KeyedProcessFunction<number, Bid, Bid> {
  private top!: ValueState<TopBids>;

  open(ctx: KeyedRuntimeContext): void {
    this.top = ctx.getState(topDescriptor);
  }

  processElement(bid: Bid, ctx: KeyedProcessContext<number>): void {
    const end = ctx.currentKey + Q7_WINDOW_MS;
    if (end - 1 <= ctx.timerService.currentWatermark()) return;
    const top = this.top.value();
    if (top === undefined) {
      ctx.timerService.registerEventTimeTimer(end - 1);
      this.top.update({ price: bid.price, bids: [bid] });
    } else if (bid.price > top.price) {
      this.top.update({ price: bid.price, bids: [bid] });
    } else if (bid.price === top.price) {
      this.top.update({ price: top.price, bids: [...top.bids, bid] });
    }
  }

  onTimer(_timestamp: number, _ctx: OnTimerContext<number>, out: Collector<Bid>): void {
    for (const bid of this.top.value()?.bids ?? []) out.collect(bid);
    this.top.clear();
  }
}

/** Highest bid: per 10 s tumbling window, the bids with the highest price (ties: all of them). */
export const q7: NexmarkQuery<Bid> = {
  name: 'q7',
  title: 'Highest Bid',
  description: `per ${Q7_WINDOW_MS / 1000} s tumbling window, the bids with the highest price`,
  build: (events) =>
    bids(events)
      .process(new LocalTopFilter(), 'q7: local candidates')
      .keyBy((b) => windowStartOf(b.dateTime))
      .process(new WindowTop(), 'q7: window maximum'),
};
