import { describe, expect, it } from 'vitest';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import type { NexmarkEvent } from '../../bench/nexmark/model.ts';
import { q0 } from '../../bench/nexmark/queries/q0.ts';
import { q1 } from '../../bench/nexmark/queries/q1.ts';
import { q2 } from '../../bench/nexmark/queries/q2.ts';
import { q4, winningBids, type CategoryAverage } from '../../bench/nexmark/queries/q4.ts';
import { q5 } from '../../bench/nexmark/queries/q5.ts';
import { q7 } from '../../bench/nexmark/queries/q7.ts';
import { q11 } from '../../bench/nexmark/queries/q11.ts';
import { q12 } from '../../bench/nexmark/queries/q12.ts';
import {
  referenceBidsPerBidder,
  referenceQ0,
  referenceQ1,
  referenceQ11,
  referenceQ2,
  referenceQ4,
  referenceQ5,
  referenceQ7,
  referenceWinningBids,
} from './reference-queries.ts';
import { allEvents, canonical, runPipeline, runQuery } from './run-query.ts';

// 300,000 events at 10,000 events/s of event time: 30 s, so windows fire and sessions close while the job runs.
// Events are out of order within groups of 64 (6.4 ms: never later than the 4 s watermark delay).
const OPTIONS: NexmarkOptions = { events: 300_000, rate: 10_000, seed: 42, outOfOrderGroupSize: 64 };
// The runner's default rate (10 M/s): the whole stream falls within one second, auctions last a millisecond or two.
const FAST: NexmarkOptions = { events: 300_000, rate: 10_000_000, seed: 7 };
// 1,000 events/s: a random bidder bids about every 4.4 s, so gaps of more than 10 s split sessions.
const SLOW: NexmarkOptions = { events: 300_000, rate: 1_000, seed: 3, outOfOrderGroupSize: 64 };

const eventsCache = new Map<NexmarkOptions, NexmarkEvent[]>();
const eventsOf = (options: NexmarkOptions): NexmarkEvent[] => {
  let events = eventsCache.get(options);
  if (events === undefined) eventsCache.set(options, (events = allEvents(options)));
  return events;
};

const BID_FIELDS = ['auction', 'bidder', 'price', 'dateTime', 'extra'];

describe.each([1, 2])('Nexmark queries at parallelism %i equal a batch computation', (parallelism) => {
  it('q0: pass through', async () => {
    const out = await runQuery(q0, OPTIONS, parallelism);
    expect(canonical(out, BID_FIELDS)).toEqual(canonical(referenceQ0(eventsOf(OPTIONS)), BID_FIELDS));
  });

  it('q1: currency conversion', async () => {
    const out = await runQuery(q1, OPTIONS, parallelism);
    expect(canonical(out, BID_FIELDS)).toEqual(canonical(referenceQ1(eventsOf(OPTIONS)), BID_FIELDS));
  });

  it('q2: selection', async () => {
    const out = await runQuery(q2, OPTIONS, parallelism);
    const expected = canonical(referenceQ2(eventsOf(OPTIONS)), ['auction', 'price']);
    expect(expected.length).toBeGreaterThan(100);
    expect(canonical(out, ['auction', 'price'])).toEqual(expected);
  });

  it.each([
    ['30 s of event time', OPTIONS],
    ['the runner default rate', FAST],
  ])('q4: winning bids and average price per category (%s)', async (_name, options) => {
    const fields = ['auction', 'category', 'price'];
    const expectedWinners = canonical(referenceWinningBids(eventsOf(options)), fields);
    expect(expectedWinners.length).toBeGreaterThan(1000);
    expect(canonical(await runPipeline(options, parallelism, winningBids), fields)).toEqual(expectedWinners);

    // The stream of updates ends, per category, with the update over all of its auctions.
    const updates = await runQuery(q4, options, parallelism);
    const latest = new Map<number, CategoryAverage>();
    for (const u of updates) if ((latest.get(u.category)?.auctions ?? 0) < u.auctions) latest.set(u.category, u);
    const reference = referenceQ4(eventsOf(options));
    expect(reference.length).toBe(5);
    expect(canonical([...latest.values()], ['category', 'averagePrice', 'auctions'])).toEqual(
      canonical(reference, ['category', 'averagePrice', 'auctions']),
    );
    expect(updates.length).toBe(expectedWinners.length);
  });

  it.each([
    ['30 s of event time', OPTIONS],
    ['the runner default rate', FAST],
  ])('q5: hot items (%s)', async (_name, options) => {
    const fields = ['windowStart', 'windowEnd', 'auction', 'count'];
    const expected = canonical(referenceQ5(eventsOf(options)), fields);
    // 30 s of event time: 19 windows or more (the last out-of-order group ends a few ms later); 30 ms: 5 windows.
    expect(new Set(expected.map((r) => JSON.parse(r)[0])).size).toBeGreaterThanOrEqual(options === OPTIONS ? 19 : 5);
    expect(canonical(await runQuery(q5, options, parallelism), fields)).toEqual(expected);
  });

  it.each([
    ['30 s of event time', OPTIONS],
    ['the runner default rate', FAST],
  ])('q7: highest bid (%s)', async (_name, options) => {
    const expected = canonical(referenceQ7(eventsOf(options)), BID_FIELDS);
    expect(expected.length).toBeGreaterThanOrEqual(options === OPTIONS ? 4 : 1);
    expect(canonical(await runQuery(q7, options, parallelism), BID_FIELDS)).toEqual(expected);
  });

  it('q11: user sessions', async () => {
    const fields = ['bidder', 'bidCount', 'starttime', 'endtime'];
    const expected = canonical(referenceQ11(eventsOf(SLOW)), fields);
    const out = await runQuery(q11, SLOW, parallelism);
    // Bidders have several sessions, and sessions close while the job runs.
    expect(expected.length).toBeGreaterThan(1.2 * new Set(out.map((s) => s.bidder)).size);
    expect(canonical(out, fields)).toEqual(expected);
  });

  it('q12: processing-time windows', async () => {
    const out = await runQuery(q12, OPTIONS, parallelism);
    // Which window a bid falls in depends on the clock; the windows' shape and the totals do not.
    const totals = new Map<number, number>();
    const seen = new Set<string>();
    for (const w of out) {
      expect(w.endtime - w.starttime).toBe(10_000);
      expect(w.starttime % 10_000).toBe(0);
      const id = `${w.bidder}@${w.starttime}`;
      expect(seen.has(id)).toBe(false);
      seen.add(id);
      totals.set(w.bidder, (totals.get(w.bidder) ?? 0) + w.bidCount);
    }
    expect(totals).toEqual(referenceBidsPerBidder(eventsOf(OPTIONS)));
  });
});
