import { BID, type Bid } from '../model.ts';
import { stateless } from './stateless.ts';
import type { BaselineFactory } from './baseline.ts';

/** q0 by hand: every bid, unchanged. */
export const q0Baseline: BaselineFactory<Bid> = () =>
  stateless((events, out) => {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind === BID) out.push(e);
    }
  });
