import type { DataStream } from 'sluice';
import { isAuction, isBid, isPerson, type Auction, type Bid, type NexmarkEvent, type Person } from '../model.ts';

// The reference's views over the one event table (the Flink suite's ddl_views.sql): filters by event kind.

export function bids(events: DataStream<NexmarkEvent>): DataStream<Bid> {
  return events.filter(isBid, 'bids') as DataStream<NexmarkEvent> as DataStream<Bid>;
}

export function auctions(events: DataStream<NexmarkEvent>): DataStream<Auction> {
  return events.filter(isAuction, 'auctions') as DataStream<NexmarkEvent> as DataStream<Auction>;
}

export function persons(events: DataStream<NexmarkEvent>): DataStream<Person> {
  return events.filter(isPerson, 'persons') as DataStream<NexmarkEvent> as DataStream<Person>;
}
