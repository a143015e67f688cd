import { describe, expect, it } from 'vitest';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import type { NexmarkEvent } from '../../bench/nexmark/model.ts';
import { q8, Q8_WINDOW_MS, type NewSeller } from '../../bench/nexmark/queries/q8.ts';
import { referenceQ8 } from './reference-queries.ts';
import { allEvents, runQueryTimestamped } from './run-query.ts';

/** The batch reference's rows (reference-queries.ts), each with the window's last millisecond as its timestamp. */
function expected(events: readonly NexmarkEvent[]): string[] {
  return referenceQ8(events)
    .map((row: NewSeller) => `${JSON.stringify(row)}@${row.starttime + Q8_WINDOW_MS - 1}`)
    .sort();
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
