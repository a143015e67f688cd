import fc from 'fast-check';
import { batchOf, type Key } from '../../../../lib/core/index.ts';
import type { KeyedStateBackend } from '../../../../lib/state/index.ts';
import type { OperatorTestHarness } from '../../../harness/operator-test-context.ts';

/** A record of either join input; `id` is unique across both inputs. */
export interface Rec {
  readonly id: number;
  readonly key: string;
  readonly input: 0 | 1;
}

/** One input batch (all records of one input) and the watermark after it. */
export interface JoinBatch {
  readonly input: 0 | 1;
  readonly values: Rec[];
  readonly timestamps: number[];
  /** Non-decreasing; +Infinity after the last batch. */
  readonly watermark: number;
  /** Processing time at which the batch arrives (non-decreasing). */
  readonly arrival: number;
}

const rawBatches = fc.array(
  fc.record({
    input: fc.constantFrom<0 | 1>(0, 1),
    events: fc.array(fc.record({ key: fc.constantFrom('a', 'b', 'c'), ts: fc.integer({ min: -30, max: 120 }) }), {
      maxLength: 7,
    }),
    // How far the watermark trails the largest timestamp seen; null: no watermark after this batch.
    lag: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }),
    wait: fc.integer({ min: 0, max: 12 }),
  }),
  { minLength: 1, maxLength: 14 },
);

/** Batches alternating at random between the inputs, with random keys, out-of-order timestamps and watermarks. */
export const joinBatchesArb: fc.Arbitrary<JoinBatch[]> = rawBatches.map((raw) => {
  let id = 0;
  let maxTs = Number.NEGATIVE_INFINITY;
  let watermark = Number.NEGATIVE_INFINITY;
  let arrival = 0;
  return raw.map((b, index) => {
    const values = b.events.map((e) => ({ id: id++, key: e.key, input: b.input }));
    const timestamps = b.events.map((e) => e.ts);
    for (const ts of timestamps) maxTs = Math.max(maxTs, ts);
    if (b.lag !== null) watermark = Math.max(watermark, maxTs - b.lag);
    if (index === raw.length - 1) watermark = Number.POSITIVE_INFINITY;
    arrival += b.wait;
    return { input: b.input, values, timestamps, watermark, arrival };
  });
});

/** Feeds the batches and their watermarks to an operator under test (watermarks only when they advance). */
export async function feed(h: OperatorTestHarness<Rec, string>, batches: readonly JoinBatch[]): Promise<void> {
  for (const b of batches) {
    await h.processBatch(batchOf(b.values.slice(), b.timestamps.slice()), b.input);
    if (b.watermark > h.currentWatermark) await h.processWatermark(b.watermark);
  }
}

/** How a test join function renders a pair, so that outputs compare as sorted strings. */
export function pairId(left: Rec, right: Rec, timestamp: number): string {
  return `${left.key}|${left.id}|${right.id}|${timestamp}`;
}

export function sorted(values: readonly string[]): string[] {
  return values.slice().sort();
}

/**
 * Gives the harness's memory backend a read-ahead (KeyedStateBackend.prefetch) that answers asynchronously, and
 * makes setting any key the latest call did not read ahead an error, until that read completes. An operator passes
 * only if it prefetches the keys of every batch and every round of timers and awaits the read before touching them.
 */
export function strictPrefetch(h: OperatorTestHarness<Rec, string>): { calls: number } {
  const backend = h.backend as KeyedStateBackend;
  const stats = { calls: 0 };
  let readable = new Set<Key>();
  backend.prefetch = (keys: readonly Key[]): Promise<void> => {
    stats.calls++;
    readable = new Set();
    return new Promise((resolve) =>
      setImmediate(() => {
        readable = new Set(keys);
        resolve();
      }),
    );
  };
  const setCurrentKey = backend.setCurrentKey.bind(backend);
  backend.setCurrentKey = (key: Key): void => {
    if (!readable.has(key)) throw new Error(`key ${String(key)} was used without being prefetched`);
    setCurrentKey(key);
  };
  return stats;
}
