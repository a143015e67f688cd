import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputTag } from '../../../../lib/core/index.ts';
import type { ProcessJoinFunction } from '../../../../lib/contracts/join-functions.ts';
import { IntervalJoinOperator } from '../../../../lib/operators/joins/interval-join-operator.ts';
import { OperatorTestHarness } from '../../../harness/operator-test-context.ts';
import { feed, joinBatchesArb, sorted, strictPrefetch, type JoinBatch, type Rec } from './join-test-data.ts';

const leftLate = new OutputTag<Rec>('left-late');
const rightLate = new OutputTag<Rec>('right-late');

const render: ProcessJoinFunction<Rec, Rec, string, string> = {
  processElement(left, right, ctx, out) {
    out.collect(`${ctx.currentKey}|${left.id}|${right.id}|${ctx.leftTimestamp}|${ctx.rightTimestamp}|${ctx.timestamp}`);
  },
};

interface Stored {
  rec: Rec;
  ts: number;
}

/**
 * Brute force: a record is late when its timestamp is at or below the watermark in force when it arrives; every
 * pair of non-late records with the same key and l.ts + lower <= r.ts <= l.ts + upper is emitted once, with the
 * larger timestamp.
 */
function model(batches: readonly JoinBatch[], lower: number, upper: number) {
  let watermark = Number.NEGATIVE_INFINITY;
  const stored: [Stored[], Stored[]] = [[], []];
  const late: [number[], number[]] = [[], []];
  for (const b of batches) {
    b.values.forEach((rec, i) => {
      const ts = b.timestamps[i] as number;
      if (ts <= watermark) late[b.input].push(rec.id);
      else stored[b.input].push({ rec, ts });
    });
    watermark = Math.max(watermark, b.watermark);
  }
  const pairs: string[] = [];
  for (const l of stored[0]) {
    for (const r of stored[1]) {
      if (l.rec.key !== r.rec.key || r.ts < l.ts + lower || r.ts > l.ts + upper) continue;
      const ts = Math.max(l.ts, r.ts);
      pairs.push(`${l.rec.key}|${l.rec.id}|${r.rec.id}|${l.ts}|${r.ts}|${ts}@${ts}`);
    }
  }
  return { pairs, late };
}

/** State entries and timers the operator should hold after `prefix` batches: buckets not yet cleaned up. */
function liveState(prefix: readonly JoinBatch[], lower: number, upper: number): { entries: number; timers: number } {
  let watermark = Number.NEGATIVE_INFINITY;
  const arrivals: { input: 0 | 1; key: string; ts: number }[] = [];
  for (const b of prefix) {
    b.values.forEach((rec, i) => {
      const ts = b.timestamps[i] as number;
      if (ts > watermark) arrivals.push({ input: b.input, key: rec.key, ts });
    });
    watermark = Math.max(watermark, b.watermark);
  }
  const buckets = new Set<string>();
  const keys = new Set<string>();
  for (const a of arrivals) {
    const cleanup = a.input === 0 ? (upper > 0 ? a.ts + upper : a.ts) : lower < 0 ? a.ts - lower : a.ts;
    if (cleanup <= watermark) continue;
    buckets.add(`${a.input}|${a.key}|${a.ts}`);
    keys.add(`${a.input}|${a.key}`);
  }
  // Per input, key and bucket one records list; per input and key one bucket index; one timer per bucket.
  return { entries: buckets.size + keys.size, timers: buckets.size };
}

describe('interval join vs. brute-force model', () => {
  it('emits exactly the in-bound pairs of non-late records, routes late records, cleans state by watermark, prefetches keys', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -30, max: 30 }),
        fc.integer({ min: 0, max: 40 }),
        fc.boolean(),
        fc.boolean(),
        joinBatchesArb,
        async (lower, width, withTags, withPrefetch, batches) => {
          const upper = lower + width;
          const operator = new IntervalJoinOperator<Rec, Rec, string, string>({
            name: 'interval-join',
            keySelector1: (r) => r.key,
            keySelector2: (r) => r.key,
            lowerBoundMs: lower,
            upperBoundMs: upper,
            leftLateDataTag: withTags ? leftLate : undefined,
            rightLateDataTag: withTags ? rightLate : undefined,
            fn: render,
          });
          const h = await OperatorTestHarness.open<Rec, string>(operator);
          const prefetches = withPrefetch ? strictPrefetch(h) : undefined;
          for (let i = 0; i < batches.length; i++) {
            await feed(h, batches.slice(i, i + 1));
            const live = liveState(batches.slice(0, i + 1), lower, upper);
            expect(h.backend?.entryCount()).toBe(live.entries);
            expect(h.timers?.eventTimerCount()).toBe(live.timers);
          }
          const expected = model(batches, lower, upper);
          expect(sorted(h.output.records().map((r) => `${r.value}@${r.timestamp}`))).toEqual(sorted(expected.pairs));
          if (withTags) {
            expect(h.output.sideValues(leftLate).map((r) => r.id)).toEqual(expected.late[0]);
            expect(h.output.sideValues(rightLate).map((r) => r.id)).toEqual(expected.late[1]);
            expect(operator.droppedLateRecords).toBe(0);
          } else {
            expect(h.output.sideBatches.size).toBe(0);
            expect(operator.droppedLateRecords).toBe(expected.late[0].length + expected.late[1].length);
          }
          // The last batch's watermark is +Infinity: nothing is left.
          expect(h.backend?.entryCount()).toBe(0);
          if (prefetches !== undefined) expect(prefetches.calls).toBeGreaterThanOrEqual(batches.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
