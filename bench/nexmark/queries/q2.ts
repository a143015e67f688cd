import { BID, type NexmarkEvent } from '../model.ts';
import type { NexmarkQuery } from './query.ts';

export interface AuctionPrice {
  readonly auction: number;
  readonly price: number;
}

/** The reference selects the bids of every 123rd auction id. */
export const AUCTION_SKIP = 123;

/** Selection: auction and price of the bids on auctions whose id is a multiple of 123. */
export const q2: NexmarkQuery<AuctionPrice> = {
  name: 'q2',
  title: 'Selection',
  description: `auction and price of the bids on auctions whose id is a multiple of ${AUCTION_SKIP}`,
  build: (events) =>
    events
      // One pass for the kind and the auction id.
      .filter((e: NexmarkEvent) => e.kind === BID && e.auction % AUCTION_SKIP === 0, 'q2: select')
      .map((e): AuctionPrice => {
        const b = e as Extract<NexmarkEvent, { kind: typeof BID }>;
        return { auction: b.auction, price: b.price };
      }, 'q2: project'),
};
