import { describe, expect, it } from 'vitest';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import type { NexmarkEvent } from '../../bench/nexmark/model.ts';
import { BASELINES } from '../../bench/nexmark/baselines/index.ts';
import { driveBaseline } from '../../bench/nexmark/baselines/drive.ts';
import { TimerHeap } from '../../bench/nexmark/baselines/timer-heap.ts';
import { referenceQ0, referenceQ1, referenceQ11, referenceQ2, referenceQ5, referenceQ7, referenceQ8 } from './reference-queries.ts';
import { allEvents, canonical } from './run-query.ts';

// 100 events/s of event time: 6,000 events span 60 s, so windows fire and sessions close while the baseline runs;
// out of order within groups of 64 (0.64 s, within the 4 s watermark delay).
const SLOW: NexmarkOptions = { events: 6_000, rate: 100, seed: 42, outOfOrderGroupSize: 64 };
// 1,000 events/s, in order.
const MEDIUM: NexmarkOptions = { events: 20_000, rate: 1_000, seed: 3 };
// The runner's default rate: everything within a few milliseconds.
const FAST: NexmarkOptions = { events: 5_000, rate: 10_000_000, seed: 7 };

const BID_FIELDS = ['auction', 'bidder', 'price', 'dateTime', 'extra'];

/** Per query: the batch reference, the fields compared, and the fewest rows the check must see to mean something. */
const CHECKS: Record<string, { reference: (events: readonly NexmarkEvent[]) => unknown[]; fields: string[]; minRows: number }> = {
  q0: { reference: referenceQ0, fields: BID_FIELDS, minRows: 1000 },
  q1: { reference: referenceQ1, fields: BID_FIELDS, minRows: 1000 },
  q2: { reference: referenceQ2, fields: ['auction', 'price'], minRows: 2 },
  q5: { reference: referenceQ5, fields: ['windowStart', 'windowEnd', 'auction', 'count'], minRows: 3 },
  q7: { reference: referenceQ7, fields: BID_FIELDS, minRows: 1 },
  q8: { reference: referenceQ8, fields: ['id', 'name', 'starttime'], minRows: 1 },
  q11: { reference: referenceQ11, fields: ['bidder', 'bidCount', 'starttime', 'endtime'], minRows: 10 },
};

function runBaseline(query: string, options: NexmarkOptions): unknown[] {
  const results: unknown[] = [];
  driveBaseline(BASELINES[query]!(), options, (out) => results.push(...out));
  return results;
}

describe('hand-written Nexmark baselines equal the batch computations', () => {
  it('cover the queries they are meant to', () => {
    expect(Object.keys(BASELINES).sort()).toEqual(Object.keys(CHECKS).sort());
  });

  describe.each([
    ['60 s of event time, out of order', SLOW],
    ['20 s of event time', MEDIUM],
    ['the runner default rate', FAST],
  ])('%s', (_name, options) => {
    const events = allEvents(options);
    it.each(Object.keys(CHECKS))('%s', (query) => {
      const { reference, fields, minRows } = CHECKS[query]!;
      const expected = canonical(reference(events), fields);
      expect(expected.length).toBeGreaterThanOrEqual(minRows);
      expect(canonical(runBaseline(query, options), fields)).toEqual(expected);
    });
  });

  it('q5 and q7 close several windows and q11 splits sessions over 60 s', () => {
    const events = allEvents(SLOW);
    expect(new Set(referenceQ5(events).map((r) => (r as { windowStart: number }).windowStart)).size).toBeGreaterThan(20);
    expect(referenceQ7(events).length).toBeGreaterThanOrEqual(6);
    const sessions = referenceQ11(events) as { bidder: number }[];
    expect(sessions.length).toBeGreaterThan(1.2 * new Set(sessions.map((s) => s.bidder)).size);
  });
});

describe('TimerHeap', () => {
  it('pops keys in time order', () => {
    const heap = new TimerHeap();
    const times = [50, 10, 40, 10, 30, 20, 60, 0];
    times.forEach((time, key) => heap.push(time, key));
    const popped: number[] = [];
    while (heap.size > 0) {
      popped.push(heap.peekTime());
      heap.pop();
    }
    expect(popped).toEqual([...times].sort((a, b) => a - b));
    expect(heap.peekTime()).toBe(Number.POSITIVE_INFINITY);
  });
});
