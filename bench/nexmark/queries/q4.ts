import {
  listState,
  valueState,
  type Collector,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type KeyedRuntimeContext,
  type ListState,
  type OnTimerContext,
  type ValueState,
} from 'sluice';
import type { NexmarkEvent } from '../model.ts';
import { auctions, bids } from './event-streams.ts';
import type { NexmarkQuery } from './query.ts';

/** The highest bid placed during an auction's lifetime [dateTime, expires] (the reference's inner join: auctions without one have none). */
export interface WinningBid {
  readonly auction: number;
  readonly category: number;
  readonly price: number;
}

/** The running average of the winning prices of a category, updated at every auction that closes with a bid. */
export interface CategoryAverage {
  readonly category: number;
  readonly averagePrice: number;
  /** Auctions averaged so far: the update with the highest count is the current result. */
  readonly auctions: number;
}

/**
 * How long a closed auction's id is remembered (event time after it expires), so that bids arriving after the close
 * are dropped at once instead of waiting as bids of an unknown auction. Correctness does not depend on it.
 */
export const CLOSED_AUCTION_RETENTION_MS = 10_000;

interface AuctionState {
  readonly category: number;
  readonly start: number;
  readonly expires: number;
  /** Highest price of a bid within [start, expires] so far; -1 without one. */
  readonly price: number;
  /** Closed (its result emitted): kept until CLOSED_AUCTION_RETENTION_MS after `expires` to drop its late bids. */
  readonly closed: boolean;
}

interface AuctionInfo {
  readonly id: number;
  readonly category: number;
  readonly start: number;
  readonly expires: number;
}
interface BidInfo {
  readonly auction: number;
  readonly price: number;
}
/** A bid that arrived before its auction (or after the auction was forgotten). */
interface PendingBid {
  readonly time: number;
  readonly price: number;
}

const auctionDescriptor = valueState<AuctionState>('auction');
const pendingDescriptor = listState<PendingBid>('pending-bids');

/**
 * Joins auctions and bids by auction id (keyed state), keeping only each auction's highest bid within its lifetime.
 * The result is final when the watermark passes `expires` (an event-time timer): every bid of the lifetime has
 * arrived then, since none is later than the watermark delay. Bids that come before their auction wait in list
 * state until it arrives or the watermark passes their time (an auction starting at or before it would be late).
 */
class WinningBidJoin implements KeyedCoProcessFunction<number, AuctionInfo, BidInfo, WinningBid> {
  private auction!: ValueState<AuctionState>;
  private pending!: ListState<PendingBid>;

  open(ctx: KeyedRuntimeContext): void {
    this.auction = ctx.getState(auctionDescriptor);
    this.pending = ctx.getListState(pendingDescriptor);
  }

  processElement1(a: AuctionInfo, ctx: KeyedProcessContext<number>): void {
    let price = -1;
    const waiting = this.pending.get();
    if (waiting.length > 0) {
      for (const b of waiting) if (b.time >= a.start && b.time <= a.expires && b.price > price) price = b.price;
      this.pending.clear();
    }
    this.auction.update({ category: a.category, start: a.start, expires: a.expires, price, closed: false });
    ctx.timerService.registerEventTimeTimer(a.expires);
  }

  processElement2(b: BidInfo, ctx: KeyedProcessContext<number>): void {
    const state = this.auction.value();
    const time = ctx.timestamp;
    if (state === undefined) {
      // One timer per list of waiting bids (at the first one's time), not one per bid.
      const waiting = this.pending.get();
      if (waiting.length === 0) ctx.timerService.registerEventTimeTimer(time);
      this.pending.add({ time, price: b.price });
    } else if (!state.closed && b.price > state.price && time >= state.start && time <= state.expires) {
      this.auction.update({ ...state, price: b.price });
    }
  }

  onTimer(timestamp: number, ctx: OnTimerContext<number>, out: Collector<WinningBid>): void {
    const state = this.auction.value();
    if (state === undefined) {
      // Bids of an auction that has not arrived: those at or before the watermark can no longer match one.
      const watermark = ctx.timerService.currentWatermark();
      const waiting = this.pending.get();
      const still = waiting.filter((b) => b.time > watermark);
      if (still.length === 0) {
        this.pending.clear();
        return;
      }
      if (still.length < waiting.length) this.pending.update(still);
      let next = Number.POSITIVE_INFINITY;
      for (const b of still) next = Math.min(next, b.time);
      ctx.timerService.registerEventTimeTimer(next);
    } else if (state.closed) {
      if (timestamp >= state.expires + CLOSED_AUCTION_RETENTION_MS) this.auction.clear();
    } else if (timestamp >= state.expires) {
      if (state.price >= 0) out.collect({ auction: ctx.currentKey, category: state.category, price: state.price });
      this.auction.update({ ...state, closed: true });
      ctx.timerService.registerEventTimeTimer(state.expires + CLOSED_AUCTION_RETENTION_MS);
    }
  }
}

/** Each auction's winning price (the inner query of q4). */
export function winningBids(events: DataStream<NexmarkEvent>): DataStream<WinningBid> {
  const auctionInfo = auctions(events).map((a): AuctionInfo => ({ id: a.id, category: a.category, start: a.dateTime, expires: a.expires }), 'q4: auctions');
  const bidInfo = bids(events).map((b): BidInfo => ({ auction: b.auction, price: b.price }), 'q4: bids');
  return auctionInfo
    .connect(bidInfo)
    .keyBy(
      (a) => a.id,
      (b) => b.auction,
    )
    .process(new WinningBidJoin(), 'q4: winning bids');
}

interface SumAndCount {
  readonly sum: number;
  readonly count: number;
}
const sumDescriptor = valueState<SumAndCount>('winning-price-sum');

class CategoryAverager implements KeyedProcessFunction<number, WinningBid, CategoryAverage> {
  private sum!: ValueState<SumAndCount>;

  open(ctx: KeyedRuntimeContext): void {
    this.sum = ctx.getState(sumDescriptor);
  }

  processElement(w: WinningBid, ctx: KeyedProcessContext<number>, out: Collector<CategoryAverage>): void {
    const previous = this.sum.value();
    const next = previous === undefined ? { sum: w.price, count: 1 } : { sum: previous.sum + w.price, count: previous.count + 1 };
    this.sum.update(next);
    out.collect({ category: ctx.currentKey, averagePrice: next.sum / next.count, auctions: next.count });
  }
}

/** Average price for a category: the average winning price of the closed auctions of each category. */
export const q4: NexmarkQuery<CategoryAverage> = {
  name: 'q4',
  title: 'Average Price for a Category',
  description: 'average of the winning bid prices (highest bid within the lifetime) of the auctions of each category',
  build: (events) =>
    winningBids(events)
      .keyBy((w) => w.category)
      .process(new CategoryAverager(), 'q4: category average'),
};
