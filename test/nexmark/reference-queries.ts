// Plain batch computations of the Nexmark queries over the whole event list: loops and Maps, written from the
// queries' definitions (the Flink suite's SQL), sharing no code with the streaming implementations.
import type { Auction, Bid, NexmarkEvent, Person } from '../../bench/nexmark/model.ts';

const bidsOf = (events: readonly NexmarkEvent[]): Bid[] => events.filter((e): e is Bid => e.kind === 2);
const auctionsOf = (events: readonly NexmarkEvent[]): Auction[] => events.filter((e): e is Auction => e.kind === 1);
export const personsOf = (events: readonly NexmarkEvent[]): Person[] => events.filter((e): e is Person => e.kind === 0);

/** q0: SELECT auction, bidder, price, dateTime, extra FROM bid. */
export function referenceQ0(events: readonly NexmarkEvent[]): unknown[] {
  return bidsOf(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }));
}

/** q1: SELECT auction, bidder, 0.908 * price AS price (DECIMAL(23, 3)), dateTime, extra FROM bid. */
export function referenceQ1(events: readonly NexmarkEvent[]): unknown[] {
  return bidsOf(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: Math.round(b.price * 0.908 * 1000) / 1000, dateTime: b.dateTime, extra: b.extra }));
}

/** q2: SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0. */
export function referenceQ2(events: readonly NexmarkEvent[]): unknown[] {
  return bidsOf(events)
    .filter((b) => b.auction % 123 === 0)
    .map((b) => ({ auction: b.auction, price: b.price }));
}

/** Inner query of q4: MAX(B.price) per auction over bids with A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires. */
export function referenceWinningBids(events: readonly NexmarkEvent[]): { auction: number; category: number; price: number }[] {
  const bidsByAuction = new Map<number, Bid[]>();
  for (const b of bidsOf(events)) {
    const list = bidsByAuction.get(b.auction);
    if (list === undefined) bidsByAuction.set(b.auction, [b]);
    else list.push(b);
  }
  const out: { auction: number; category: number; price: number }[] = [];
  for (const a of auctionsOf(events)) {
    let max = -1;
    for (const b of bidsByAuction.get(a.id) ?? []) {
      if (b.dateTime >= a.dateTime && b.dateTime <= a.expires && b.price > max) max = b.price;
    }
    if (max >= 0) out.push({ auction: a.id, category: a.category, price: max });
  }
  return out;
}

/** q4: SELECT category, AVG(final) FROM (winning bids) GROUP BY category, with the number of auctions averaged. */
export function referenceQ4(events: readonly NexmarkEvent[]): { category: number; averagePrice: number; auctions: number }[] {
  const sums = new Map<number, { sum: number; count: number }>();
  for (const w of referenceWinningBids(events)) {
    const s = sums.get(w.category) ?? { sum: 0, count: 0 };
    s.sum += w.price;
    s.count++;
    sums.set(w.category, s);
  }
  return [...sums].map(([category, s]) => ({ category, averagePrice: s.sum / s.count, auctions: s.count }));
}

/**
 * q5: per HOP(2 s, 10 s) window, count(*) per auction; the auctions whose count is >= the window's maximum.
 * Windows are epoch-aligned: a bid at t is in the windows starting at the multiples of 2 s in (t - 10 s, t].
 */
export function referenceQ5(events: readonly NexmarkEvent[]): unknown[] {
  const counts = new Map<number, Map<number, number>>(); // window start -> auction -> count
  for (const b of bidsOf(events)) {
    const lastStart = b.dateTime - (b.dateTime % 2000);
    for (let start = lastStart; start > b.dateTime - 10_000; start -= 2000) {
      let perAuction = counts.get(start);
      if (perAuction === undefined) counts.set(start, (perAuction = new Map()));
      perAuction.set(b.auction, (perAuction.get(b.auction) ?? 0) + 1);
    }
  }
  const out: unknown[] = [];
  for (const [start, perAuction] of counts) {
    const max = Math.max(...perAuction.values());
    for (const [auction, count] of perAuction) {
      if (count === max) out.push({ auction, count, windowStart: start, windowEnd: start + 10_000 });
    }
  }
  return out;
}

/** q7: per TUMBLE(10 s) window, the bids whose price equals the window's maximum price. */
export function referenceQ7(events: readonly NexmarkEvent[]): unknown[] {
  const byWindow = new Map<number, Bid[]>();
  for (const b of bidsOf(events)) {
    const start = b.dateTime - (b.dateTime % 10_000);
    const list = byWindow.get(start);
    if (list === undefined) byWindow.set(start, [b]);
    else list.push(b);
  }
  const out: unknown[] = [];
  for (const list of byWindow.values()) {
    let max = -1;
    for (const b of list) max = Math.max(max, b.price);
    for (const b of list) if (b.price === max) out.push({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra });
  }
  return out;
}

/**
 * q11: count(*) per bidder and SESSION(dateTime, 10 s): a bidder's bids in time order form one session while each
 * comes at most 10 s after the previous one (windows [t, t + gap) that touch merge); the session is
 * [first bid, last bid + 10 s).
 */
export function referenceQ11(events: readonly NexmarkEvent[]): unknown[] {
  const times = new Map<number, number[]>();
  for (const b of bidsOf(events)) {
    const list = times.get(b.bidder);
    if (list === undefined) times.set(b.bidder, [b.dateTime]);
    else list.push(b.dateTime);
  }
  const out: unknown[] = [];
  for (const [bidder, list] of times) {
    list.sort((x, y) => x - y);
    let start = list[0] as number;
    let last = start;
    let count = 0;
    for (const t of list) {
      if (t > last + 10_000) {
        out.push({ bidder, bidCount: count, starttime: start, endtime: last + 10_000 });
        start = t;
        count = 0;
      }
      last = t;
      count++;
    }
    out.push({ bidder, bidCount: count, starttime: start, endtime: last + 10_000 });
  }
  return out;
}

/** q12 (processing time, so only what does not depend on the clock): bids per bidder in total. */
export function referenceBidsPerBidder(events: readonly NexmarkEvent[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const b of bidsOf(events)) counts.set(b.bidder, (counts.get(b.bidder) ?? 0) + 1);
  return counts;
}

/**
 * q8: persons grouped by (id, name, TUMBLE(10 s)) joined with auctions grouped by (seller, TUMBLE(10 s)) on
 * id = seller and the same window: P.id, P.name, the window start.
 */
export function referenceQ8(events: readonly NexmarkEvent[]): { id: number; name: string; starttime: number }[] {
  const windowStart = (time: number): number => time - (time % 10_000);
  const people = new Map<string, { id: number; name: string; starttime: number }>();
  const sellers = new Set<string>();
  for (const p of personsOf(events)) {
    const row = { id: p.id, name: p.name, starttime: windowStart(p.dateTime) };
    people.set(JSON.stringify(row), row);
  }
  for (const a of auctionsOf(events)) sellers.add(`${a.seller}|${windowStart(a.dateTime)}`);
  return [...people.values()].filter((p) => sellers.has(`${p.id}|${p.starttime}`));
}
