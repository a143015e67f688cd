import { describe, expect, it } from 'vitest';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import { isAuction, isPerson, type NexmarkEvent } from '../../bench/nexmark/model.ts';
import { q8, Q8_WINDOW_MS, type NewSeller } from '../../bench/nexmark/queries/q8.ts';
import { allEvents, runQueryTimestamped } from './run-query.ts';

const windowStart = (time: number): number => time - (time % Q8_WINDOW_MS);

/**
 * q8 as the reference's SQL, computed in batch: persons grouped by (id, name, window), auctions grouped by
 * (seller, window), joined on id = seller and the same window. Rows carry the window's last millisecond.
 */
function expected(events: readonly NexmarkEvent[]): string[] {
  const people = new Set<string>();
  const sellers = new Set<string>();
  for (const e of events) {
    if (isPerson(e)) people.add(JSON.stringify([e.id, e.name, windowStart(e.dateTime)]));
    else if (isAuction(e)) sellers.add(`${e.seller}|${windowStart(e.dateTime)}`);
  }
  const rows: string[] = [];
  for (const group of people) {
    const [id, name, starttime] = JSON.parse(group) as [number, string, number];
    if (!sellers.has(`${id}|${starttime}`)) continue;
    const row: NewSeller = { id, name, starttime };
    rows.push(`${JSON.stringify(row)}@${starttime + Q8_WINDOW_MS - 1}`);
  }
  return rows.sort();
}

const run = (options: NexmarkOptions, parallelism: number) => runQueryTimestamped(q8, options, parallelism);

describe('Nexmark q8 (monitor new users)', () => {
  // 1,000 events per second of event time: 60,000 events span six 10 s windows.
  const options: NexmarkOptions = { seed: 3, events: 60_000, rate: 1_000 };
  const reference = expected(allEvents(options));

  it('has new sellers in several windows for this seed', () => {
    expect(reference.length).toBeGreaterThan(10);
    expect(new Set(reference.map((r) => (JSON.parse(r.slice(0, r.indexOf('@'))) as NewSeller).starttime)).size).toBeGreaterThan(3);
  });

  it.each([1, 2])('equals the batch computation at parallelism %i', async (parallelism) => {
    expect(await run(options, parallelism)).toEqual(reference);
  });

  it('equals the batch computation with events out of order within the watermark delay', async () => {
    const shuffled: NexmarkOptions = { seed: 5, events: 50_000, rate: 1_000, outOfOrderGroupSize: 1_500 };
    expect(await run(shuffled, 2)).toEqual(expected(allEvents(shuffled)));
  });
});
