import type { NexmarkQuery } from './query.ts';
import { auctions, persons } from './event-streams.ts';

/** A seller from Oregon, Idaho or California and one of their auctions in category 10. */
export interface LocalItemSuggestion {
  readonly name: string;
  readonly city: string;
  readonly state: string;
  /** The auction's id. */
  readonly id: number;
}

/** The reference's `A.category = 10`. */
export const Q3_CATEGORY = 10;
/** The reference's `P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA'`. */
export const Q3_STATES: readonly string[] = ['OR', 'ID', 'CA'];

interface Seller {
  readonly id: number;
  readonly name: string;
  readonly city: string;
  readonly state: string;
}

/**
 * Local item suggestion (the Flink suite's q3.sql): `SELECT P.name, P.city, P.state, A.id FROM auction A INNER
 * JOIN person P ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')`. An unbounded regular
 * join, as in the reference (no state TTL): both inputs are filtered and projected first, then every auction meets
 * its seller whichever arrives first (auctions may name a seller who registers later).
 */
export const q3: NexmarkQuery<LocalItemSuggestion> = {
  name: 'q3',
  title: 'Local Item Suggestion',
  description: `sellers in ${Q3_STATES.join('/')} with their auctions in category ${Q3_CATEGORY} (regular join of auctions and persons)`,
  build: (events) => {
    const categoryAuctions = auctions(events)
      .filter((a) => a.category === Q3_CATEGORY, 'q3: category')
      .map((a) => ({ id: a.id, seller: a.seller }), 'q3: auction columns');
    const localSellers = persons(events)
      .filter((p) => Q3_STATES.includes(p.state), 'q3: states')
      .map((p): Seller => ({ id: p.id, name: p.name, city: p.city, state: p.state }), 'q3: person columns');
    return categoryAuctions
      .keyBy((a) => a.seller)
      .regularJoin(localSellers.keyBy((p) => p.id))
      .apply((a, p): LocalItemSuggestion => ({ name: p.name, city: p.city, state: p.state, id: a.id }), 'q3: join');
  },
};
