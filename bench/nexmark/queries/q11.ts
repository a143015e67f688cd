import { EventTimeSessionWindows } from 'sluice';
import { countAll } from './counting.ts';
import { bids } from './event-streams.ts';
import type { NexmarkQuery } from './query.ts';

export const Q11_GAP_MS = 10_000;

/** Bids of one bidder in one session (or, for q12, one processing-time window). */
export interface BidderCount {
  readonly bidder: number;
  readonly bidCount: number;
  readonly starttime: number;
  readonly endtime: number;
}

/** User sessions: bids per bidder and session (sessions end after 10 s of event time without a bid). */
export const q11: NexmarkQuery<BidderCount> = {
  name: 'q11',
  title: 'User Sessions',
  description: `bids per bidder and session (a session ends after ${Q11_GAP_MS / 1000} s without a bid)`,
  build: (events) =>
    bids(events)
      .map((b) => b.bidder, 'q11: bidder ids')
      .keyBy((bidder) => bidder)
      .window(EventTimeSessionWindows.withGap(Q11_GAP_MS))
      .aggregate(
        countAll,
        (bidCount, bidder, window): BidderCount => ({ bidder, bidCount, starttime: window.start, endtime: window.end }),
        'q11: bids per session',
      ),
};
