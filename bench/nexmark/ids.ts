/**
 * Event ids and the ids they imply (Beam's GeneratorConfig, PersonGenerator, AuctionGenerator): of every 50
 * consecutive event ids, 1 is a new person, 3 are new auctions and 46 are bids, so the id of the latest person or
 * auction at any event follows from the event id alone. That keeps the stream splittable: any subtask can make any
 * event without knowing the others.
 */

export const PERSON_PROPORTION = 1;
export const AUCTION_PROPORTION = 3;
export const BID_PROPORTION = 46;
export const PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

/** Ids start here so that queries find matches even in small streams. */
export const FIRST_PERSON_ID = 1000;
export const FIRST_AUCTION_ID = 1000;
export const FIRST_CATEGORY_ID = 10;
export const NUM_CATEGORIES = 5;

/** Hot sellers, bidders and auctions are the first (bidders: second) of each block of this many ids. */
export const HOT_RATIO_BLOCK = 100;
/** Ids of people and auctions not yet created that bids and auctions may refer to. */
export const PERSON_ID_LEAD = 10;
export const AUCTION_ID_LEAD = 10;

export type EventType = 'person' | 'auction' | 'bid';

export function eventTypeOf(eventId: number): EventType {
  const rem = eventId % PROPORTION_DENOMINATOR;
  if (rem < PERSON_PROPORTION) return 'person';
  return rem < PERSON_PROPORTION + AUCTION_PROPORTION ? 'auction' : 'bid';
}

/** The latest person id (base 0) at `eventId`: that event's own id if it creates a person. */
export function lastBase0PersonId(eventId: number): number {
  const epoch = Math.floor(eventId / PROPORTION_DENOMINATOR);
  let offset = eventId % PROPORTION_DENOMINATOR;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

/** The latest auction id (base 0) at `eventId`: that event's own id if it creates an auction; -1 before any. */
export function lastBase0AuctionId(eventId: number): number {
  let epoch = Math.floor(eventId / PROPORTION_DENOMINATOR);
  let offset = eventId % PROPORTION_DENOMINATOR;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    offset = AUCTION_PROPORTION - 1;
  } else {
    offset -= PERSON_PROPORTION;
  }
  return epoch * AUCTION_PROPORTION + offset;
}

/** Java's long division (truncates toward zero), used by the hot-id formulas. */
export function hotBlockStart(base0Id: number): number {
  return Math.trunc(base0Id / HOT_RATIO_BLOCK) * HOT_RATIO_BLOCK;
}

/**
 * Which event, in event-number order, is emitted at `position`: events are permuted within groups of
 * `groupSize` (Beam's nextAdjustedEventNumber; 953 is prime, so this is a permutation unless it divides the size).
 */
export function adjustedEventNumber(position: number, groupSize: number): number {
  if (groupSize === 1) return position;
  const base = Math.floor(position / groupSize) * groupSize;
  return base + ((position % groupSize) * 953) % groupSize;
}
