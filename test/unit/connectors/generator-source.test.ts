import { describe, expect, it } from 'vitest';
import { ConfigError, ManualClock } from '../../../lib/core/index.ts';
import { generatorSource } from '../../../lib/connectors/local/index.ts';
import type { Transaction } from '../../../lib/connectors/local/index.ts';
import { drainReader, readAll, readerContext } from './drain-source.ts';

function byOffset<T>(records: { offset: number; value: T; timestamp: number }[]) {
  return [...records].sort((a, b) => a.offset - b.offset).map(({ offset, value, timestamp }) => ({ offset, value, timestamp }));
}

describe('generatorSource', () => {
  it('makes the same records at any parallelism, each index exactly once', async () => {
    const options = { seed: 7, count: 1000, keyCount: 50, startTime: 1_000_000, eventIntervalMs: 10, maxOutOfOrdernessMs: 25 };
    const reference = byOffset(await readAll(generatorSource(options), 1, 64));
    expect(reference.map((r) => r.offset)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    for (const parallelism of [2, 3, 7, 16]) {
      expect(byOffset(await readAll(generatorSource(options), parallelism, 13))).toEqual(reference);
    }
  });

  it('default records: accounts a-<n> below keyCount, amounts 1..100000, ts jittered back within maxOutOfOrderness', async () => {
    const got = await readAll(generatorSource({ seed: 1, count: 5000, keyCount: 20, startTime: 500, eventIntervalMs: 3, maxOutOfOrdernessMs: 40 }), 2, 100);
    const accounts = new Set<string>();
    let jittered = 0;
    for (const { value, timestamp, offset } of got) {
      const tx = value as Transaction;
      expect(tx.account).toMatch(/^a-(1?\d)$/);
      accounts.add(tx.account);
      expect(Number.isInteger(tx.amountCents) && tx.amountCents >= 1 && tx.amountCents <= 100000).toBe(true);
      const scheduled = 500 + offset * 3;
      expect(tx.ts).toBeLessThanOrEqual(scheduled);
      expect(tx.ts).toBeGreaterThanOrEqual(scheduled - 40);
      if (tx.ts !== scheduled) jittered++;
      expect(timestamp).toBe(tx.ts);
    }
    expect(accounts.size).toBe(20);
    expect(jittered).toBeGreaterThan(4000);
    const noJitter = await readAll(generatorSource({ count: 100, startTime: 10, eventIntervalMs: 2 }), 1, 100);
    expect(noJitter.map((r) => (r.value as Transaction).ts)).toEqual(Array.from({ length: 100 }, (_, i) => 10 + 2 * i));
  });

  it('different seeds give different streams; the same seed the same one', async () => {
    const a = await readAll(generatorSource({ seed: 1, count: 200 }), 1, 200);
    const b = await readAll(generatorSource({ seed: 2, count: 200 }), 1, 200);
    const a2 = await readAll(generatorSource({ seed: 1, count: 200 }), 1, 200);
    expect(a2.map((r) => r.value)).toEqual(a.map((r) => r.value));
    const same = a.filter((r, i) => JSON.stringify(r.value) === JSON.stringify(b[i]?.value)).length;
    expect(same).toBeLessThan(10);
  });

  it('user records via generate(index, random, eventTime) are deterministic per index', async () => {
    const generate = (index: number, random: () => number, eventTime: number) => ({ index, r: random(), r2: random(), eventTime });
    const options = { seed: 99, count: 300, maxOutOfOrdernessMs: 5, generate };
    const one = byOffset(await readAll(generatorSource(options), 1, 50));
    const five = byOffset(await readAll(generatorSource(options), 5, 50));
    expect(five).toEqual(one);
    for (const r of one) {
      expect(r.value.index).toBe(r.offset);
      expect(r.value.r).not.toBe(r.value.r2);
      expect(r.value.r >= 0 && r.value.r < 1).toBe(true);
      expect(r.timestamp).toBe(r.value.eventTime);
    }
  });

  it('is unbounded without a count and resumes from currentSplits', async () => {
    const source = generatorSource({ seed: 3 });
    expect(source.bounded).toBe(false);
    const splits = await source.createSplits({ parallelism: 2 });
    const reader = await source.createReader([splits[1]!], readerContext(1, 2));
    const seen: number[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await reader.poll(1000);
      expect(r.kind).toBe('batch');
      if (r.kind === 'batch') seen.push(...(r.batch.offsets ?? []));
    }
    expect(seen).toHaveLength(50_000);
    expect(seen.slice(0, 3)).toEqual([1, 3, 5]);
    const resumed = await source.createReader(structuredClone(reader.currentSplits()), readerContext(1, 2));
    const next = await resumed.poll(2);
    expect(next.kind === 'batch' && next.batch.offsets).toEqual([100_001, 100_003]);
  });

  it('throttles to ratePerSecond over all subtasks', async () => {
    const clock = new ManualClock(0);
    const source = generatorSource({ count: 100_000, ratePerSecond: 4000 });
    const splits = await source.createSplits({ parallelism: 4 });
    // One of four subtasks: 1000 records/s, bursts of at most 100 ms worth.
    const reader = await source.createReader([splits[0]!], readerContext(0, 4, clock));
    const first = await reader.poll(1000);
    expect(first.kind).toBe('wait');
    let produced = 0;
    for (let ms = 0; ms < 2000; ms += 10) {
      clock.advance(10);
      const r = await reader.poll(1000);
      if (r.kind === 'batch') {
        expect(r.batch.values.length).toBeLessThanOrEqual(100);
        produced += r.batch.values.length;
      } else expect(r.kind).toBe('wait');
    }
    expect(produced).toBeGreaterThanOrEqual(1990);
    expect(produced).toBeLessThanOrEqual(2000);
    clock.advance(60_000);
    const burst = await reader.poll(100_000);
    expect(burst.kind === 'batch' && burst.batch.values.length).toBe(100);
  });

  it('ends a bounded stream, also when a subtask has nothing to make', async () => {
    const got = await readAll(generatorSource({ count: 3 }), 5, 10);
    expect(got.map((r) => r.offset).sort()).toEqual([0, 1, 2]);
    const empty = generatorSource({ count: 0 });
    const reader = await empty.createReader(await empty.createSplits({ parallelism: 1 }), readerContext(0, 1));
    expect(await drainReader(reader)).toEqual([]);
  });

  it('rejects bad options with a ConfigError', () => {
    expect(() => generatorSource({ count: -1 })).toThrow(ConfigError);
    expect(() => generatorSource({ keyCount: 0 })).toThrow(ConfigError);
    expect(() => generatorSource({ ratePerSecond: 0 })).toThrow(ConfigError);
    expect(() => generatorSource({ maxOutOfOrdernessMs: 1.5 })).toThrow(ConfigError);
  });
});
