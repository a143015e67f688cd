import { describe, expect, it } from 'vitest';
import { ConfigError, systemClock } from '../../lib/index.ts';
import { nexmarkConfig, type NexmarkOptions } from '../../bench/nexmark/config.ts';
import { NexmarkGenerator } from '../../bench/nexmark/generator.ts';
import { lastBase0AuctionId, lastBase0PersonId } from '../../bench/nexmark/ids.ts';
import { AUCTION, BID, PERSON, type Auction, type Bid, type NexmarkEvent, type Person } from '../../bench/nexmark/model.ts';
import { nexmarkSource, type NexmarkSplit } from '../../bench/nexmark/source.ts';
import { allEvents } from './run-query.ts';

const readerContext = (subtask: number, parallelism: number) => ({
  subtask,
  parallelism,
  clock: systemClock,
  signal: new AbortController().signal,
  fencing: { attempt: 0, epoch: 0 },
  checkpointing: false,
});

/** Everything the source's subtasks emit, by position, with the batch timestamps, checking each split's order. */
async function readSource(options: NexmarkOptions, parallelism: number, batchSize = 700): Promise<Map<number, { event: NexmarkEvent; timestamp: number }>> {
  const source = nexmarkSource(options);
  const splits = source.createSplits({ parallelism });
  const out = new Map<number, { event: NexmarkEvent; timestamp: number }>();
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const reader = source.createReader(splits.filter((_, i) => i % parallelism === subtask), readerContext(subtask, parallelism));
    let last = -Infinity;
    for (let r = reader.poll(batchSize); r.kind !== 'end'; r = reader.poll(batchSize)) {
      if (r.kind !== 'batch') throw new Error('the generator never waits');
      const { values, timestamps, offsets } = r.batch;
      values.forEach((event, i) => {
        const position = offsets![i]!;
        expect(out.has(position)).toBe(false);
        out.set(position, { event, timestamp: timestamps[i]! });
        if (options.outOfOrderGroupSize === undefined) expect(timestamps[i]!).toBeGreaterThanOrEqual(last);
        last = timestamps[i]!;
      });
    }
  }
  return out;
}

describe('Nexmark generator', () => {
  it('gives the same events, with their event times as timestamps, at any parallelism', async () => {
    const options = { events: 20_000, rate: 50_000, seed: 5 };
    const expected = allEvents(options);
    for (const parallelism of [1, 2, 3]) {
      const read = await readSource(options, parallelism);
      expect(read.size).toBe(expected.length);
      expected.forEach((event, position) => {
        expect(read.get(position)!.event).toEqual(event);
        expect(read.get(position)!.timestamp).toBe(event.dateTime);
      });
    }
  });

  it('depends on the seed only: same seed, same stream; another seed, other values', () => {
    const a = allEvents({ events: 2000, seed: 1 });
    expect(allEvents({ events: 2000, seed: 1 })).toEqual(a);
    const b = allEvents({ events: 2000, seed: 2 });
    expect(b.map((e) => e.kind)).toEqual(a.map((e) => e.kind));
    expect(b.filter((e, i) => JSON.stringify(e) === JSON.stringify(a[i])).length).toBeLessThan(20);
  });

  it('makes 1 person, 3 auctions and 46 bids of every 50 events, with consecutive person and auction ids', () => {
    const events = allEvents({ events: 50_000, seed: 9 });
    const persons = events.filter((e): e is Person => e.kind === PERSON);
    const auctions = events.filter((e): e is Auction => e.kind === AUCTION);
    expect(persons.length).toBe(1000);
    expect(auctions.length).toBe(3000);
    expect(events.filter((e) => e.kind === BID).length).toBe(46_000);
    expect(persons.map((p) => p.id)).toEqual(persons.map((_, i) => 1000 + i));
    expect(auctions.map((a) => a.id)).toEqual(auctions.map((_, i) => 1000 + i));
  });

  it('places event n at baseTime + floor(n * 1000 / rate)', () => {
    const events = allEvents({ events: 5000, rate: 7, baseTime: 1_000_000 });
    events.forEach((e, n) => expect(e.dateTime).toBe(1_000_000 + Math.floor((n * 1000) / 7)));
    const fast = allEvents({ events: 100_000 });
    expect(fast.at(-1)!.dateTime - fast[0]!.dateTime).toBe(9); // 10 M events/s: 100,000 events in 10 ms
  });

  it('refers to existing or soon-created people and auctions, with the reference hot-key ratios', () => {
    const events = allEvents({ events: 200_000, seed: 4 });
    const bids: { bid: Bid; id: number }[] = [];
    const auctions: { auction: Auction; id: number }[] = [];
    events.forEach((e, id) => {
      if (e.kind === BID) bids.push({ bid: e, id });
      if (e.kind === AUCTION) auctions.push({ auction: e, id });
    });
    let hotAuction = 0;
    let hotBidder = 0;
    const outOfRange: unknown[] = [];
    for (const { bid, id } of bids) {
      const lastAuction = lastBase0AuctionId(id);
      const lastPerson = lastBase0PersonId(id);
      const auction = bid.auction - 1000;
      const bidder = bid.bidder - 1000;
      // In flight: one of the latest 100 auctions, or one of the next 10.
      if (auction < Math.max(lastAuction - 100, 0) || auction > lastAuction + 10) outOfRange.push({ id, auction, lastAuction });
      // Active: one of the latest 1,000 people, or one of the next 10.
      if (bidder < Math.max(lastPerson + 1 - 1000, 0) || bidder > lastPerson + 10) outOfRange.push({ id, bidder, lastPerson });
      if (auction === Math.trunc(lastAuction / 100) * 100) hotAuction++;
      if (bidder === Math.trunc(lastPerson / 100) * 100 + 1) hotBidder++;
    }
    expect(outOfRange).toEqual([]);
    // hotAuctionRatio 2: half the bids, plus the random ones that happen to pick it; hotBiddersRatio 4: three quarters.
    expect(hotAuction / bids.length).toBeGreaterThan(0.49);
    expect(hotAuction / bids.length).toBeLessThan(0.53);
    expect(hotBidder / bids.length).toBeGreaterThan(0.74);
    expect(hotBidder / bids.length).toBeLessThan(0.76);
    const hotSellers = auctions.filter(({ auction, id }) => auction.seller - 1000 === Math.trunc(lastBase0PersonId(id) / 100) * 100).length;
    expect(hotSellers / auctions.length).toBeGreaterThan(0.72);
    expect(hotSellers / auctions.length).toBeLessThan(0.78);
  });

  it('pads events to the reference average sizes (person 200, auction 500, bid 100 bytes)', () => {
    const events = allEvents({ events: 200_000, seed: 8 });
    const size = { [PERSON]: [0, 0], [AUCTION]: [0, 0], [BID]: [0, 0] };
    for (const e of events) {
      // The sizes the generator pads to (Beam's currentSize): 8 bytes per number, the lengths of the strings.
      const s =
        e.kind === PERSON
          ? 8 + e.name.length + e.emailAddress.length + e.creditCard.length + e.city.length + e.state.length + e.extra.length
          : e.kind === AUCTION
            ? 8 + e.itemName.length + e.description.length + 40 + e.extra.length
            : 32 + e.extra.length;
      size[e.kind][0]! += s;
      size[e.kind][1]!++;
    }
    const mean = (k: 0 | 1 | 2) => size[k][0]! / size[k][1]!;
    expect(mean(PERSON)).toBeCloseTo(200, -1);
    expect(Math.abs(mean(AUCTION) - 500)).toBeLessThan(5);
    expect(Math.abs(mean(BID) - 100)).toBeLessThan(1);
  });

  it('makes plausible values: names, emails, cards, states, categories, prices, auction lengths', () => {
    const events = allEvents({ events: 100_000, rate: 10_000, seed: 12 });
    const lengths: number[] = [];
    for (const e of events) {
      if (e.kind === PERSON) {
        expect(e.name).toMatch(/^[A-Z][a-z]+ [A-Z][a-z]+$/);
        expect(e.emailAddress).toMatch(/^[a-z ]*@[a-z ]*\.com$/);
        expect(e.creditCard).toMatch(/^\d{4} \d{4} \d{4} \d{4}$/);
        expect(['AZ', 'CA', 'ID', 'OR', 'WA', 'WY']).toContain(e.state);
      } else if (e.kind === AUCTION) {
        expect(e.category).toBeGreaterThanOrEqual(10);
        expect(e.category).toBeLessThanOrEqual(14);
        expect(e.reserve).toBeGreaterThanOrEqual(e.initialBid);
        expect(e.expires).toBeGreaterThan(e.dateTime);
        lengths.push(e.expires - e.dateTime);
      } else {
        expect(e.price).toBeGreaterThanOrEqual(100);
        expect(e.price).toBeLessThanOrEqual(100_000_000);
        expect(e.extra).toMatch(/^[a-z]+$/);
      }
    }
    // Lengths are uniform in [1, 2 * horizon], the horizon being the time for 100 more auctions (1,666 events: 166 ms).
    const meanLength = lengths.reduce((a, b) => a + b, 0) / lengths.length;
    expect(meanLength).toBeGreaterThan(150);
    expect(meanLength).toBeLessThan(185);
    // Prices are log-uniform over 1..1,000,000 dollars: about half are below 1,000 dollars.
    const prices = events.filter((e): e is Bid => e.kind === BID).map((b) => b.price);
    const cheap = prices.filter((p) => p < 100_000).length / prices.length;
    expect(cheap).toBeGreaterThan(0.48);
    expect(cheap).toBeLessThan(0.52);
  });

  it('permutes events within out-of-order groups, keeping every event', () => {
    const ordered = allEvents({ events: 10_000, rate: 1000, seed: 3 });
    const shuffled = allEvents({ events: 10_000, rate: 1000, seed: 3, outOfOrderGroupSize: 100 });
    const generator = new NexmarkGenerator(nexmarkConfig({ events: 10_000, outOfOrderGroupSize: 100 }));
    for (let group = 0; group < 100; group++) {
      const ids = Array.from({ length: 100 }, (_, i) => generator.eventIdAt(group * 100 + i));
      expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => group * 100 + i));
    }
    expect(canonicalSet(shuffled)).toEqual(canonicalSet(ordered));
    let backwards = 0;
    for (let i = 1; i < shuffled.length; i++) if (shuffled[i]!.dateTime < shuffled[i - 1]!.dateTime) backwards++;
    expect(backwards).toBeGreaterThan(100);
  });

  it('resumes from the split positions it reports (checkpoints)', async () => {
    const source = nexmarkSource({ events: 10_000, seed: 1 });
    const [split] = source.createSplits({ parallelism: 1 }) as [NexmarkSplit];
    const reader = source.createReader([split], readerContext(0, 1));
    const first = reader.poll(3000);
    if (first.kind !== 'batch') throw new Error('expected a batch');
    const resumed = source.createReader(reader.currentSplits(), readerContext(0, 1));
    const rest: NexmarkEvent[] = [];
    for (let r = resumed.poll(4000); r.kind === 'batch'; r = resumed.poll(4000)) rest.push(...r.batch.values);
    expect([...first.batch.values, ...rest]).toEqual(allEvents({ events: 10_000, seed: 1 }));
  });

  it('rejects bad options with a ConfigError', () => {
    expect(() => nexmarkConfig({ events: -1 })).toThrow(ConfigError);
    expect(() => nexmarkConfig({ rate: 0 })).toThrow(ConfigError);
    expect(() => nexmarkConfig({ outOfOrderGroupSize: 953 })).toThrow(/953/);
    expect(() => nexmarkConfig({ avgBidByteSize: 1e6 })).toThrow(ConfigError);
  });
});

function canonicalSet(events: readonly NexmarkEvent[]): string[] {
  return events.map((e) => JSON.stringify(e)).sort();
}
