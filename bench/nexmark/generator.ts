import type { NexmarkConfig } from './config.ts';
import { EventRandom } from './event-random.ts';
import {
  AUCTION_ID_LEAD,
  AUCTION_PROPORTION,
  FIRST_AUCTION_ID,
  FIRST_CATEGORY_ID,
  FIRST_PERSON_ID,
  NUM_CATEGORIES,
  PERSON_ID_LEAD,
  PERSON_PROPORTION,
  PROPORTION_DENOMINATOR,
  adjustedEventNumber,
  hotBlockStart,
  lastBase0AuctionId,
  lastBase0PersonId,
} from './ids.ts';
import { nextCreditCard, nextExtra, nextString } from './strings.ts';
import { AUCTION, BID, PERSON, type Auction, type Bid, type NexmarkEvent, type Person } from './model.ts';

const US_STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
const US_CITIES = ['Phoenix', 'Los Angeles', 'San Francisco', 'Boise', 'Portland', 'Bend', 'Redmond', 'Seattle', 'Kent', 'Cheyenne'];
const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
const SIX_LN10 = 6 * Math.LN10;
/** Every "first last" combination, built once. */
const FULL_NAMES = FIRST_NAMES.flatMap((first) => LAST_NAMES.map((last) => `${first} ${last}`));

/**
 * Apache Beam's Nexmark generator (sources/generator: Generator, GeneratorConfig, Person/Auction/BidGenerator)
 * as a pure function of (config, position): the event emitted at position p of the global stream is the event
 * with id adjustedEventNumber(p) (out-of-order groups), at event time baseTime + floor(id * 1000 / rate), drawn
 * from a random stream seeded by (seed, id). Deviations from Beam: a seed is mixed in (Beam seeds with the event
 * id alone); the random numbers (and so the values) differ from java.util.Random's; one timeline (Beam's
 * numEventGenerators = 1, as the Flink suite runs it); random strings are windows of a random pool.
 */
export class NexmarkGenerator {
  private readonly random = new EventRandom();
  /** Events until numInFlightAuctions more auctions exist: the average auction lasts that long. */
  private readonly eventsPerAuctionHorizon: number;

  constructor(readonly config: NexmarkConfig) {
    this.random.setSeed(config.seed);
    this.eventsPerAuctionHorizon = Math.floor((config.numInFlightAuctions * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION);
  }

  /** Id of the event emitted at `position` (0-based) of the global stream. */
  eventIdAt(position: number): number {
    return adjustedEventNumber(position, this.config.outOfOrderGroupSize);
  }

  /** Event time of event `eventId`. */
  timestampOf(eventId: number): number {
    return this.config.baseTime + Math.floor((eventId * 1000) / this.config.rate);
  }

  /** The event emitted at `position` of the global stream. */
  eventAt(position: number): NexmarkEvent {
    return this.event(this.eventIdAt(position));
  }

  /** The event with id `eventId`. */
  event(eventId: number): NexmarkEvent {
    const timestamp = this.timestampOf(eventId);
    this.random.reset(eventId);
    const rem = eventId % PROPORTION_DENOMINATOR;
    if (rem < PERSON_PROPORTION) return this.person(eventId, timestamp);
    if (rem < PERSON_PROPORTION + AUCTION_PROPORTION) return this.auction(eventId, timestamp);
    return this.bid(eventId, timestamp);
  }

  private person(eventId: number, timestamp: number): Person {
    const random = this.random;
    const first = random.nextInt(FIRST_NAMES.length);
    const name = FULL_NAMES[first * LAST_NAMES.length + random.nextInt(LAST_NAMES.length)] as string;
    const emailAddress = `${nextString(random, 7)}@${nextString(random, 5)}.com`;
    const creditCard = nextCreditCard(random);
    const city = US_CITIES[random.nextInt(US_CITIES.length)] as string;
    const state = US_STATES[random.nextInt(US_STATES.length)] as string;
    const currentSize = 8 + name.length + emailAddress.length + creditCard.length + city.length + state.length;
    const extra = nextExtra(random, currentSize, this.config.avgPersonByteSize);
    return {
      kind: PERSON,
      id: lastBase0PersonId(eventId) + FIRST_PERSON_ID,
      name,
      emailAddress,
      creditCard,
      city,
      state,
      dateTime: timestamp,
      extra,
    };
  }

  private auction(eventId: number, timestamp: number): Auction {
    const random = this.random;
    const config = this.config;
    // P(hot seller) = 1 - 1/hotSellersRatio: the first person of the latest block of 100.
    const seller =
      (random.nextInt(config.hotSellersRatio) > 0 ? hotBlockStart(lastBase0PersonId(eventId)) : this.nextBase0PersonId(eventId)) +
      FIRST_PERSON_ID;
    const category = FIRST_CATEGORY_ID + random.nextInt(NUM_CATEGORIES);
    const initialBid = this.nextPrice();
    const expires = timestamp + this.nextAuctionLengthMs(eventId, timestamp);
    const itemName = nextString(random, 20);
    const description = nextString(random, 100);
    const reserve = initialBid + this.nextPrice();
    const currentSize = 8 + itemName.length + description.length + 8 + 8 + 8 + 8 + 8;
    const extra = nextExtra(random, currentSize, config.avgAuctionByteSize);
    return {
      kind: AUCTION,
      id: lastBase0AuctionId(eventId) + FIRST_AUCTION_ID,
      itemName,
      description,
      initialBid,
      reserve,
      dateTime: timestamp,
      expires,
      seller,
      category,
      extra,
    };
  }

  private bid(eventId: number, timestamp: number): Bid {
    const random = this.random;
    const config = this.config;
    // P(hot auction) = 1 - 1/hotAuctionRatio: the first auction of the latest block of 100.
    const auction =
      (random.nextInt(config.hotAuctionRatio) > 0 ? hotBlockStart(lastBase0AuctionId(eventId)) : this.nextBase0AuctionId(eventId)) +
      FIRST_AUCTION_ID;
    // Hot bidders are the second person of the block, so that hot bidders and hot sellers differ.
    const bidder =
      (random.nextInt(config.hotBiddersRatio) > 0 ? hotBlockStart(lastBase0PersonId(eventId)) + 1 : this.nextBase0PersonId(eventId)) +
      FIRST_PERSON_ID;
    const price = this.nextPrice();
    const extra = nextExtra(random, 8 + 8 + 8 + 8, config.avgBidByteSize);
    return { kind: BID, auction, bidder, price, dateTime: timestamp, extra };
  }

  /** One of the latest numActivePeople people, or one of the next few not yet created. */
  private nextBase0PersonId(eventId: number): number {
    const numPeople = lastBase0PersonId(eventId) + 1;
    const activePeople = Math.min(numPeople, this.config.numActivePeople);
    return numPeople - activePeople + this.random.nextLong(activePeople + PERSON_ID_LEAD);
  }

  /** One of the latest numInFlightAuctions auctions, or one of the next few not yet created. */
  private nextBase0AuctionId(eventId: number): number {
    const maxAuction = lastBase0AuctionId(eventId);
    const minAuction = Math.max(maxAuction - this.config.numInFlightAuctions, 0);
    return minAuction + this.random.nextLong(maxAuction - minAuction + 1 + AUCTION_ID_LEAD);
  }

  /** Log-uniform between 1 and 1,000,000 dollars, in cents: round(10^(6u) * 100), as exp (3x faster than pow). */
  private nextPrice(): number {
    return Math.round(Math.exp(this.random.nextDouble() * SIX_LN10) * 100);
  }

  /** Uniform in [1, 2 * horizon], where horizon is the event time until numInFlightAuctions more auctions exist. */
  private nextAuctionLengthMs(eventId: number, timestamp: number): number {
    const horizonMs = this.timestampOf(eventId + this.eventsPerAuctionHorizon) - timestamp;
    return 1 + this.random.nextLong(Math.max(horizonMs * 2, 1));
  }
}
