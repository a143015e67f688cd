import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchOf } from '../../../../lib/core/index.ts';
import type { ProcessJoinFunction } from '../../../../lib/contracts/join-functions.ts';
import { RegularJoinOperator, type StateRetention } from '../../../../lib/operators/joins/regular-join-operator.ts';
import { OperatorTestHarness } from '../../../harness/operator-test-context.ts';
import { joinBatchesArb, sorted, strictPrefetch, type JoinBatch, type Rec } from './join-test-data.ts';

const render: ProcessJoinFunction<Rec, Rec, string, string> = {
  processElement(left, right, ctx, out) {
    out.collect(`${ctx.currentKey}|${left.id}|${right.id}|${ctx.leftTimestamp}|${ctx.rightTimestamp}|${ctx.timestamp}`);
  },
};

interface Buffered {
  rec: Rec;
  ts: number;
  expiry: number;
}

/**
 * Brute force over arrival order: a record joins every earlier record of the other input with its key that was
 * buffered and has not expired (expiry above the watermark, or above the arrival time, in force when it arrives),
 * then is buffered itself unless it has already expired. Without retention nothing expires.
 */
function runModel(batches: readonly JoinBatch[], retention: StateRetention | undefined) {
  const buffered: [Buffered[], Buffered[]] = [[], []];
  const pairs: string[] = [];
  let watermark = Number.NEGATIVE_INFINITY;
  const limitAt = (arrival: number) =>
    retention === undefined ? Number.NEGATIVE_INFINITY : retention.timeDomain === 'event' ? watermark : arrival;
  for (const b of batches) {
    const limit = limitAt(b.arrival);
    b.values.forEach((rec, i) => {
      const ts = b.timestamps[i] as number;
      const other = buffered[b.input === 0 ? 1 : 0];
      for (const o of other) {
        if (o.rec.key !== rec.key || o.expiry <= limit) continue;
        const [l, lts, r, rts] = b.input === 0 ? [rec, ts, o.rec, o.ts] : [o.rec, o.ts, rec, ts];
        const out = Math.max(lts, rts);
        pairs.push(`${rec.key}|${l.id}|${r.id}|${lts}|${rts}|${out}@${out}`);
      }
      const expiry =
        retention === undefined ? Number.POSITIVE_INFINITY : (retention.timeDomain === 'event' ? ts : b.arrival) + retention.ms;
      if (expiry > limit) buffered[b.input].push({ rec, ts, expiry });
    });
    watermark = Math.max(watermark, b.watermark);
  }
  return { pairs, buffered };
}

/** Entries the backend holds for the buffered records still alive at `limit`, and their cleanup timers. */
function liveState(buffered: [Buffered[], Buffered[]], limit: number, withTimers: boolean) {
  const buckets = new Set<string>();
  const keys = new Set<string>();
  buffered.forEach((list, input) => {
    for (const b of list) {
      if (b.expiry <= limit) continue;
      buckets.add(`${input}|${b.rec.key}|${b.expiry}`);
      keys.add(`${input}|${b.rec.key}`);
    }
  });
  // Per bucket a records list and a timestamps list; per input and key a bucket index.
  return { entries: 2 * buckets.size + keys.size, timers: withTimers ? buckets.size : 0 };
}

const retentionArb: fc.Arbitrary<StateRetention | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.record({ ms: fc.integer({ min: 1, max: 40 }), timeDomain: fc.constantFrom<'event' | 'processing'>('event', 'processing') }),
);

describe('regular join vs. brute-force model', () => {
  it('joins each record with the live buffered records of the other input, and cleans up expired state', async () => {
    await fc.assert(
      // Whether the task delivers due wake-ups before a batch, or the clock has moved on without them (timers late).
      fc.asyncProperty(
        retentionArb,
        joinBatchesArb,
        fc.array(fc.boolean(), { minLength: 14, maxLength: 14 }),
        fc.boolean(),
        async (retention, batches, delivers, withPrefetch) => {
        const operator = new RegularJoinOperator<Rec, Rec, string, string>({
          name: 'regular-join',
          keySelector1: (r) => r.key,
          keySelector2: (r) => r.key,
          retention,
          fn: render,
        });
        const h = await OperatorTestHarness.open<Rec, string>(operator);
        const prefetches = withPrefetch ? strictPrefetch(h) : undefined;
        let delivered = Number.NEGATIVE_INFINITY;
        for (let i = 0; i < batches.length; i++) {
          const b = batches[i] as JoinBatch;
          if (delivers[i] === true) {
            await h.setProcessingTime(b.arrival);
            delivered = b.arrival;
          } else {
            h.clock.set(b.arrival);
          }
          await h.processBatch(batchOf(b.values.slice(), b.timestamps.slice()), b.input);
          if (b.watermark > h.currentWatermark) await h.processWatermark(b.watermark);
          const { buffered } = runModel(batches.slice(0, i + 1), retention);
          const limit =
            retention === undefined ? Number.NEGATIVE_INFINITY : retention.timeDomain === 'event' ? h.currentWatermark : delivered;
          const live = liveState(buffered, limit, retention !== undefined);
          expect(h.backend?.entryCount()).toBe(live.entries);
          expect((h.timers?.eventTimerCount() ?? 0) + (h.timers?.processingTimerCount() ?? 0)).toBe(live.timers);
        }
        const model = runModel(batches, retention);
        expect(sorted(h.output.records().map((r) => `${r.value}@${r.timestamp}`))).toEqual(sorted(model.pairs));
        if (prefetches !== undefined) expect(prefetches.calls).toBeGreaterThanOrEqual(batches.length);
        if (retention !== undefined) {
          // Expiry by watermark (+Infinity at the end) or by the clock: nothing is left.
          await h.advanceProcessingTime(1_000);
          expect(h.backend?.entryCount()).toBe(0);
          expect(h.timers?.eventTimerCount()).toBe(0);
          expect(h.timers?.processingTimerCount()).toBe(0);
          expect(h.pendingWakeups()).toEqual([]);
        }
        },
      ),
      { numRuns: 300 },
    );
  });
});
