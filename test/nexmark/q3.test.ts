import { describe, expect, it } from 'vitest';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import { isAuction, isPerson, type NexmarkEvent } from '../../bench/nexmark/model.ts';
import { q3, Q3_CATEGORY, Q3_STATES, type LocalItemSuggestion } from '../../bench/nexmark/queries/q3.ts';
import { allEvents, runQueryTimestamped } from './run-query.ts';

/** q3 as a batch computation: every (category-10 auction, local seller) pair, with the later of the two times. */
function expected(events: readonly NexmarkEvent[]): string[] {
  const sellers = new Map<number, Extract<NexmarkEvent, { kind: 0 }>[]>();
  for (const e of events) {
    if (isPerson(e) && Q3_STATES.includes(e.state)) sellers.set(e.id, [...(sellers.get(e.id) ?? []), e]);
  }
  const rows: string[] = [];
  for (const a of events) {
    if (!isAuction(a) || a.category !== Q3_CATEGORY) continue;
    for (const p of sellers.get(a.seller) ?? []) {
      const row: LocalItemSuggestion = { name: p.name, city: p.city, state: p.state, id: a.id };
      rows.push(`${JSON.stringify(row)}@${Math.max(a.dateTime, p.dateTime)}`);
    }
  }
  return rows.sort();
}

const run = (options: NexmarkOptions, parallelism: number) => runQueryTimestamped(q3, options, parallelism);

describe('Nexmark q3 (local item suggestion)', () => {
  const options: NexmarkOptions = { seed: 7, events: 60_000 };
  const reference = expected(allEvents(options));

  it('has matches to find for this seed', () => {
    expect(reference.length).toBeGreaterThan(50);
  });

  it.each([1, 2])('equals the batch join at parallelism %i', async (parallelism) => {
    expect(await run(options, parallelism)).toEqual(reference);
  });

  it('equals the batch join with events out of order and sellers registering after their auctions', async () => {
    const shuffled: NexmarkOptions = { seed: 11, events: 40_000, rate: 1_000, outOfOrderGroupSize: 700 };
    const rows = expected(allEvents(shuffled));
    expect(rows.length).toBeGreaterThan(0);
    expect(await run(shuffled, 2)).toEqual(rows);
  });
});
