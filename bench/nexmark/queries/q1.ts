import type { NexmarkQuery } from './query.ts';
import { bids } from './event-streams.ts';

export interface EuroBid {
  readonly auction: number;
  readonly bidder: number;
  /** 0.908 x the dollar price, rounded to 3 decimals as the reference's DECIMAL(23, 3). */
  readonly price: number;
  readonly dateTime: number;
  readonly extra: string;
}

/** The dollar price as euros (the reference's 0.908 * price): price * 908 is exact, one rounding in the division. */
export function toEuros(price: number): number {
  return (price * 908) / 1000;
}

/** Currency conversion: every bid with its price in euros. */
export const q1: NexmarkQuery<EuroBid> = {
  name: 'q1',
  title: 'Currency Conversion',
  description: 'every bid with its price converted from dollars to euros',
  build: (events) =>
    bids(events).map(
      (b): EuroBid => ({ auction: b.auction, bidder: b.bidder, price: toEuros(b.price), dateTime: b.dateTime, extra: b.extra }),
      'q1: to euros',
    ),
};
