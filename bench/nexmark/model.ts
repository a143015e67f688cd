/**
 * The Nexmark event model (Apache Beam's org.apache.beam.sdk.nexmark.model): people open auctions and bid on
 * them. Every event is a plain object with a numeric `kind`, so one stream carries all three without a wrapper
 * object per event. Times are epoch milliseconds. Events are shared between operators: never mutate one.
 */

export const PERSON = 0;
export const AUCTION = 1;
export const BID = 2;

/** A person registering (event kind 0). */
export interface Person {
  readonly kind: typeof PERSON;
  readonly id: number;
  readonly name: string;
  readonly emailAddress: string;
  readonly creditCard: string;
  readonly city: string;
  readonly state: string;
  readonly dateTime: number;
  /** Padding up to the reference average size of a person event. */
  readonly extra: string;
}

/** An item put up for auction (event kind 1); it accepts bids from `dateTime` until `expires`. */
export interface Auction {
  readonly kind: typeof AUCTION;
  readonly id: number;
  readonly itemName: string;
  readonly description: string;
  readonly initialBid: number;
  readonly reserve: number;
  readonly dateTime: number;
  readonly expires: number;
  readonly seller: number;
  readonly category: number;
  readonly extra: string;
}

/** A bid (event kind 2); `price` is in cents. */
export interface Bid {
  readonly kind: typeof BID;
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
  readonly extra: string;
}

export type NexmarkEvent = Person | Auction | Bid;

export const isPerson = (event: NexmarkEvent): event is Person => event.kind === PERSON;
export const isAuction = (event: NexmarkEvent): event is Auction => event.kind === AUCTION;
export const isBid = (event: NexmarkEvent): event is Bid => event.kind === BID;
