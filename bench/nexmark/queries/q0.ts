import type { Bid } from '../model.ts';
import { bids } from './event-streams.ts';
import type { NexmarkQuery } from './query.ts';

/** Pass through: every bid, unchanged (measures the source, the runtime and the sink). */
export const q0: NexmarkQuery<Bid> = {
  name: 'q0',
  title: 'Pass Through',
  description: 'every bid, unchanged',
  build: (events) => bids(events),
};
