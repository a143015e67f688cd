import { describe, expect, it } from 'vitest';
import { ConfigError, InvalidKeyError, NO_TIMESTAMP, UserFunctionError } from '../../../../lib/core/index.ts';
import { processJoinOfPairs } from '../../../../lib/operators/joins/join-function-adapters.ts';
import { RegularJoinOperator, type StateRetention } from '../../../../lib/operators/joins/regular-join-operator.ts';
import { OperatorTestHarness, type HarnessSnapshot } from '../../../harness/operator-test-context.ts';

interface Person {
  id: number;
  name: string;
}
interface Auction {
  id: number;
  seller: number;
}

const render = processJoinOfPairs<Person, Auction, string, number>((p, a) => `${p.name}:${a.id}`);

async function open(retention?: StateRetention, restoreFrom?: HarnessSnapshot) {
  const operator = new RegularJoinOperator<Person, Auction, number, string>({
    name: 'rj',
    keySelector1: (p) => p.id,
    keySelector2: (a) => a.seller,
    retention,
    fn: render,
  });
  return OperatorTestHarness.open<Person | Auction, string>(operator, { restoreFrom });
}

const persons = (h: OperatorTestHarness<Person | Auction, string>, items: [number, string, number][]) =>
  h.processElements(
    items.map(([id, name]) => ({ id, name })),
    items.map(([, , ts]) => ts),
    0,
  );
const auctions = (h: OperatorTestHarness<Person | Auction, string>, items: [number, number, number][]) =>
  h.processElements(
    items.map(([id, seller]) => ({ id, seller })),
    items.map(([, , ts]) => ts),
    1,
  );

describe('regular join', () => {
  it('joins every pair with equal keys whichever arrives first, across watermarks, with the larger timestamp', async () => {
    const h = await open();
    await auctions(h, [
      [100, 1, 50],
      [101, 2, 60],
    ]);
    await h.processWatermark(1_000);
    await persons(h, [
      [1, 'ann', 10],
      [3, 'cid', 20],
    ]);
    await auctions(h, [
      [102, 1, 5],
      [103, 3, 7],
    ]);
    expect(h.output.records()).toEqual([
      { value: 'ann:100', timestamp: 50 },
      { value: 'ann:102', timestamp: 10 },
      { value: 'cid:103', timestamp: 20 },
    ]);
    // Without retention nothing is ever dropped, and no timers are kept.
    await h.finish();
    expect(h.timers?.eventTimerCount()).toBe(0);
    expect(h.backend?.entryCount()).toBeGreaterThan(0);
  });

  it('needs no timestamps without retention and keeps its buffers in snapshots', async () => {
    const h = await open();
    await h.processElements([{ id: 1, name: 'ann' }], [NO_TIMESTAMP], 0);
    const restored = await open(undefined, h.snapshot());
    await restored.processElements([{ id: 7, seller: 1 }], [NO_TIMESTAMP], 1);
    expect(restored.output.records()).toEqual([{ value: 'ann:7', timestamp: NO_TIMESTAMP }]);
  });

  it('drops a record once the watermark passes its timestamp plus the event-time retention', async () => {
    const h = await open({ ms: 100, timeDomain: 'event' });
    await persons(h, [[1, 'ann', 10]]);
    await h.processWatermark(109);
    await auctions(h, [[100, 1, 200]]);
    expect(h.output.values()).toEqual(['ann:100']);
    await h.processWatermark(110);
    await auctions(h, [[101, 1, 200]]);
    expect(h.output.values()).toEqual(['ann:100']);
    // An already expired record still joins what is buffered, but is not buffered itself.
    await persons(h, [[1, 'old', 5]]);
    expect(h.output.values()).toEqual(['ann:100', 'old:100', 'old:101']);
    await auctions(h, [[102, 1, 300]]);
    expect(h.output.values()).toHaveLength(3);
    await h.finish();
    expect(h.backend?.entryCount()).toBe(0);
    await expect(persons(h, [[2, 'x', NO_TIMESTAMP]])).rejects.toBeInstanceOf(ConfigError);
  });

  it('drops a record by the clock with processing-time retention, asking the task for wake-ups', async () => {
    const h = await open({ ms: 1_000, timeDomain: 'processing' });
    await h.setProcessingTime(5_000);
    await persons(h, [[1, 'ann', NO_TIMESTAMP]]);
    expect(h.pendingWakeups()).toEqual([6_000]);
    await h.setProcessingTime(5_999);
    await auctions(h, [[100, 1, NO_TIMESTAMP]]);
    expect(h.output.values()).toEqual(['ann:100']);
    await h.setProcessingTime(6_000);
    await auctions(h, [[101, 1, NO_TIMESTAMP]]);
    expect(h.output.values()).toEqual(['ann:100']);
    // The auctions expire at 6_999 and 7_000.
    await h.setProcessingTime(7_000);
    expect(h.backend?.entryCount()).toBe(0);
    expect(h.pendingWakeups()).toEqual([]);
  });

  it('re-requests the wake-up of restored processing-time cleanup timers', async () => {
    const h = await open({ ms: 1_000, timeDomain: 'processing' });
    await persons(h, [[1, 'ann', NO_TIMESTAMP]]);
    const restored = await open({ ms: 1_000, timeDomain: 'processing' }, h.snapshot());
    expect(restored.pendingWakeups()).toEqual([1_000]);
    await restored.setProcessingTime(1_000);
    expect(restored.backend?.entryCount()).toBe(0);
  });

  it('fails with typed errors and refuses bad retention settings', async () => {
    const operator = new RegularJoinOperator<Person, Auction, number, string>({
      name: 'rj',
      keySelector1: (p) => p.id,
      keySelector2: (a) => a.seller,
      fn: {
        processElement() {
          throw new Error('boom');
        },
      },
    });
    const h = await OperatorTestHarness.open<Person | Auction, string>(operator);
    await persons(h, [[1, 'ann', 1]]);
    const err = await auctions(h, [[5, 1, 2]]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserFunctionError);
    expect((err as UserFunctionError).operator).toBe('rj');

    const spec = { name: 'rj', keySelector1: (p: Person) => p.id, keySelector2: (a: Auction) => a.seller, fn: render };
    expect(() => new RegularJoinOperator({ ...spec, retention: { ms: 0, timeDomain: 'event' } })).toThrow(ConfigError);
    expect(() => new RegularJoinOperator({ ...spec, retention: { ms: 10, timeDomain: 'wall' as 'event' } })).toThrow(ConfigError);
  });

  it.each([NaN, Infinity, undefined])('refuses the key %s as the key selector\'s error, naming the record', async (bad) => {
    const operator = new RegularJoinOperator<Person, Auction, number, string>({
      name: 'rj',
      keySelector1: (p) => (p.id === 2 ? (bad as number) : p.id),
      keySelector2: (a) => a.seller,
      fn: render,
    });
    const h = await OperatorTestHarness.open<Person | Auction, string>(operator);
    const err = await persons(h, [[1, 'ann', 1], [2, 'bob', 2]]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserFunctionError);
    expect((err as UserFunctionError).operator).toBe('rj');
    expect((err as UserFunctionError).cause).toBeInstanceOf(InvalidKeyError);
    expect((err as Error).message).toMatch(/keys must be strings or finite numbers/);
  });
});
