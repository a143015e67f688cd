import { BID } from '../model.ts';
import { toEuros, type EuroBid } from '../queries/q1.ts';
import { stateless } from './stateless.ts';
import type { BaselineFactory } from './baseline.ts';

/** q1 by hand: every bid with its price in euros (the same conversion as the query, so results are identical). */
export const q1Baseline: BaselineFactory<EuroBid> = () =>
  stateless((events, out) => {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind === BID) out.push({ auction: e.auction, bidder: e.bidder, price: toEuros(e.price), dateTime: e.dateTime, extra: e.extra });
    }
  });
