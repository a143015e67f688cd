import {
  SlidingEventTimeWindows,
  listState,
  valueState,
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type KeyedRuntimeContext,
  type ListState,
  type OnTimerContext,
  type ValueState,
} from 'sluice';
import { countAll } from './counting.ts';
import { bids } from './event-streams.ts';
import type { NexmarkQuery } from './query.ts';

export const Q5_WINDOW_MS = 10_000;
export const Q5_SLIDE_MS = 2_000;

/** Bids of one auction in one window. */
export interface AuctionCount {
  readonly auction: number;
  readonly count: number;
  readonly windowStart: number;
  readonly windowEnd: number;
}

const maxDescriptor = valueState<number>('max-count');
const leadersDescriptor = listState<number>('max-auctions');

/**
 * Per window (the key is its end), the auctions with the highest count. Counts of a window arrive at its end - 1
 * (the window operator fires then), before the watermark that fires this function's timer at the same time.
 */
class HottestAuctions implements KeyedProcessFunction<number, AuctionCount, AuctionCount> {
  private max!: ValueState<number>;
  private leaders!: ListState<number>;

  open(ctx: KeyedRuntimeContext): void {
    this.max = ctx.getState(maxDescriptor);
    this.leaders = ctx.getListState(leadersDescriptor);
  }

  processElement(c: AuctionCount, ctx: KeyedProcessContext<number>): void {
    const max = this.max.value();
    if (max === undefined) {
      ctx.timerService.registerEventTimeTimer(c.windowEnd - 1);
    } else if (c.count < max) {
      return;
    } else if (c.count === max) {
      this.leaders.add(c.auction);
      return;
    }
    this.max.update(c.count);
    this.leaders.update([c.auction]);
  }

  onTimer(_timestamp: number, ctx: OnTimerContext<number>, out: Collector<AuctionCount>): void {
    const count = this.max.value() as number;
    const windowEnd = ctx.currentKey;
    for (const auction of this.leaders.get()) out.collect({ auction, count, windowStart: windowEnd - Q5_WINDOW_MS, windowEnd });
    this.max.clear();
    this.leaders.clear();
  }
}

/** Hot items: per sliding window (10 s every 2 s), the auctions with the most bids (ties: all of them). */
export const q5: NexmarkQuery<AuctionCount> = {
  name: 'q5',
  title: 'Hot Items',
  description: `per ${Q5_WINDOW_MS / 1000} s window sliding by ${Q5_SLIDE_MS / 1000} s, the auctions with the most bids`,
  build: (events) =>
    bids(events)
      // Only the auction id travels to the window (the record keeps its timestamp).
      .map((b) => b.auction, 'q5: auction ids')
      .keyBy((auction) => auction)
      .window(SlidingEventTimeWindows.of(Q5_WINDOW_MS, Q5_SLIDE_MS))
      .aggregate(
        countAll,
        (count, auction, window): AuctionCount => ({ auction, count, windowStart: window.start, windowEnd: window.end }),
        'q5: bids per auction and window',
      )
      .keyBy((c) => c.windowEnd)
      .process(new HottestAuctions(), 'q5: hottest auctions'),
};
