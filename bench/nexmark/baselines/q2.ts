import { BID } from '../model.ts';
import { AUCTION_SKIP, type AuctionPrice } from '../queries/q2.ts';
import { stateless } from './stateless.ts';
import type { BaselineFactory } from './baseline.ts';

/** q2 by hand: auction and price of the bids on every 123rd auction. */
export const q2Baseline: BaselineFactory<AuctionPrice> = () =>
  stateless((events, out) => {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind === BID && e.auction % AUCTION_SKIP === 0) out.push({ auction: e.auction, price: e.price });
    }
  });
