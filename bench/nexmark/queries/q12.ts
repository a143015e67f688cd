import { TumblingProcessingTimeWindows } from 'sluice';
import { countAll } from './counting.ts';
import { bids } from './event-streams.ts';
import type { BidderCount } from './q11.ts';
import type { NexmarkQuery } from './query.ts';

export const Q12_WINDOW_MS = 10_000;

/** Processing-time windows: bids per bidder in 10 s windows of the clock (windows still open fire at the end). */
export const q12: NexmarkQuery<BidderCount> = {
  name: 'q12',
  title: 'Processing Time Windows',
  description: `bids per bidder in ${Q12_WINDOW_MS / 1000} s tumbling processing-time windows`,
  build: (events) =>
    bids(events)
      .map((b) => b.bidder, 'q12: bidder ids')
      .keyBy((bidder) => bidder)
      .window(TumblingProcessingTimeWindows.of(Q12_WINDOW_MS))
      .aggregate(
        countAll,
        (bidCount, bidder, window): BidderCount => ({ bidder, bidCount, starttime: window.start, endtime: window.end }),
        'q12: bids per window',
      ),
};
