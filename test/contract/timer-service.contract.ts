/**
 * The contract every InternalTimerService must meet together with the keyed state backend it is created for (the
 * runtime pairs them: memory + heap timers, RocksDB + timers in RocksDB). A test file calls
 * `runTimerServiceContract(name, create)`; `create` returns a fresh pair. Snapshots go through both phases and
 * are restored the way the runtime restores them (operator-chain.ts): keyed state first, then the timer service
 * with the heap timers of the snapshot plus the ones the backend found in state files. `peers` are other pairs
 * whose snapshots this one must restore and which must restore this one's.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyGroupOf,
  keyGroupRangeContains,
  keyGroupRangeForSubtask,
  type Key,
  type KeyGroupRange,
} from '../../lib/core/index.ts';
import type { InternalTimerService, Timer, TimerKeyGroupSnapshot } from '../../lib/state/timers/timer-service.ts';
import {
  isPendingKeyedSnapshot,
  valueState,
  type KeyedStateBackend,
  type KeyedStateHandle,
  type Namespace,
} from '../../lib/state/index.ts';
import { TempSharedStore } from './temp-shared-store.ts';

export interface TimerPair {
  readonly backend: KeyedStateBackend;
  readonly timers: InternalTimerService;
}

export type TimerPairFactory = (range: KeyGroupRange, maxParallelism: number) => TimerPair;

const MAX_PARALLELISM = 128;
const FULL: KeyGroupRange = { start: 0, end: MAX_PARALLELISM - 1 };

interface Snapshot {
  readonly keyed: KeyedStateHandle;
  readonly timers: TimerKeyGroupSnapshot[];
}

async function open(create: TimerPairFactory, range: KeyGroupRange = FULL): Promise<TimerPair> {
  const pair = create(range, MAX_PARALLELISM);
  await pair.backend.open?.();
  return pair;
}

async function snapshotOf(pair: TimerPair, id: number, store: TempSharedStore): Promise<Snapshot> {
  const keyed = pair.backend.snapshot(id);
  return { keyed: isPendingKeyedSnapshot(keyed) ? await keyed.complete(store) : keyed, timers: pair.timers.snapshot() };
}

async function restoreInto(
  create: TimerPairFactory,
  snapshots: readonly Snapshot[],
  store: TempSharedStore,
  range: KeyGroupRange = FULL,
): Promise<TimerPair> {
  const pair = await open(create, range);
  await pair.backend.restore(
    snapshots.map((s) => s.keyed),
    store,
  );
  const fromFiles = pair.backend.takeRestoredTimers?.() ?? [];
  pair.timers.restore([...snapshots.flatMap((s) => s.timers), ...fromFiles], range);
  return pair;
}

/** Pops like the operators do: round after round until an empty one. */
function popAll(timers: InternalTimerService, domain: 'event' | 'processing', limit: number): Timer[] {
  const out: Timer[] = [];
  for (;;) {
    const round = domain === 'event' ? timers.popEventTimeTimers(limit) : timers.popProcessingTimeTimers(limit);
    if (round.length === 0) return out;
    out.push(...round);
  }
}

const id = (t: Timer): string => `${t.timestamp}|${String(t.key)}|${String(t.namespace)}`;
const sortedIds = (timers: readonly Timer[]): string[] => timers.map(id).sort();

function expectTimestampOrder(timers: readonly Timer[]): void {
  for (let i = 1; i < timers.length; i++) expect(timers[i]!.timestamp).toBeGreaterThanOrEqual(timers[i - 1]!.timestamp);
}

function keysIn(range: KeyGroupRange, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const key = `k${i}`;
    if (keyGroupRangeContains(range, keyGroupOf(key, MAX_PARALLELISM))) keys.push(key);
  }
  return keys;
}

export function runTimerServiceContract(
  name: string,
  create: TimerPairFactory,
  options: { readonly peers?: Readonly<Record<string, TimerPairFactory>> } = {},
): void {
  describe(`${name} (timer service contract)`, () => {
    let store: TempSharedStore;
    const pairs: TimerPair[] = [];
    const track = (pair: TimerPair): TimerPair => {
      pairs.push(pair);
      return pair;
    };
    beforeAll(async () => {
      store = await TempSharedStore.create('sluice-timer-contract-');
    });
    afterAll(async () => {
      for (const pair of pairs) await pair.backend.dispose();
      await store.dispose();
    });

    it('fires event-time timers up to the watermark in timestamp order, once each', async () => {
      const { timers } = track(await open(create));
      timers.registerEventTimeTimer('a', '', 30);
      timers.registerEventTimeTimer('b', 'w1', 10);
      timers.registerEventTimeTimer('a', 'w2', 20);
      timers.registerEventTimeTimer('a', '', 30); // duplicate: kept once
      timers.registerEventTimeTimer('c', '', -5);
      expect(timers.eventTimerCount()).toBe(4);
      expect(timers.nextEventTime()).toBe(-5);
      const first = popAll(timers, 'event', 20);
      expect(first.map(id)).toEqual(['-5|c|', '10|b|w1', '20|a|w2']);
      expect(timers.eventTimerCount()).toBe(1);
      expect(timers.nextEventTime()).toBe(30);
      expect(popAll(timers, 'event', 29)).toEqual([]);
      expect(popAll(timers, 'event', Number.POSITIVE_INFINITY).map(id)).toEqual(['30|a|']);
      expect(timers.eventTimerCount()).toBe(0);
      expect(timers.nextEventTime()).toBeUndefined();
    });

    it('keeps the two time domains apart and deletes only the named timer', async () => {
      const { timers } = track(await open(create));
      timers.registerEventTimeTimer('a', '', 5);
      timers.registerProcessingTimeTimer('a', '', 5);
      timers.registerProcessingTimeTimer('a', '', 7);
      timers.registerProcessingTimeTimer('a', 'x', 7);
      timers.deleteProcessingTimeTimer('a', '', 7);
      timers.deleteProcessingTimeTimer('a', '', 99); // not pending: no effect
      timers.deleteEventTimeTimer('b', '', 5); // not pending: no effect
      expect(timers.processingTimerCount()).toBe(2);
      expect(timers.nextProcessingTime()).toBe(5);
      expect(popAll(timers, 'processing', 100).map(id)).toEqual(['5|a|', '7|a|x']);
      expect(timers.eventTimerCount()).toBe(1);
      timers.deleteEventTimeTimer('a', '', 5);
      expect(timers.nextEventTime()).toBeUndefined();
      expect(popAll(timers, 'event', 100)).toEqual([]);
    });

    it('fires a timer registered at or below a time already fired at the next pop, and one registered while firing in the same pop', async () => {
      const { timers } = track(await open(create));
      timers.registerEventTimeTimer('a', '', 10);
      expect(popAll(timers, 'event', 10).map(id)).toEqual(['10|a|']);
      timers.registerEventTimeTimer('b', '', 3); // late: below the last watermark
      timers.registerEventTimeTimer('a', '', 10); // the fired one again
      expect(timers.nextEventTime()).toBe(3);
      expect(timers.eventTimerCount()).toBe(2);
      expect(sortedIds(popAll(timers, 'event', 11))).toEqual(['10|a|', '3|b|']);
      // While firing: a round, then timers registered at or below the limit, then the next round.
      timers.registerEventTimeTimer('c', '', 20);
      const round = timers.popEventTimeTimers(30);
      expect(round.map(id)).toEqual(['20|c|']);
      timers.registerEventTimeTimer('c', '', 25);
      timers.registerEventTimeTimer('d', '', 31);
      expect(timers.popEventTimeTimers(30).map(id)).toEqual(['25|c|']);
      expect(timers.popEventTimeTimers(30)).toEqual([]);
      expect(timers.eventTimerCount()).toBe(1);
    });

    it('fires tens of thousands of timers over many keys exactly once, in rounds', async () => {
      const { timers } = track(await open(create));
      const keys = keysIn(FULL, 5000);
      let expected = 0;
      for (let i = 0; i < keys.length; i++) {
        for (let w = 0; w < 4; w++) {
          timers.registerEventTimeTimer(keys[i]!, w, 1000 * w + (i % 97));
          expected++;
        }
      }
      timers.deleteEventTimeTimer(keys[0]!, 0, 0);
      expected--;
      expect(timers.eventTimerCount()).toBe(expected);
      const fired = [...popAll(timers, 'event', 1500), ...popAll(timers, 'event', Number.POSITIVE_INFINITY)];
      expect(fired).toHaveLength(expected);
      expect(new Set(fired.map(id)).size).toBe(expected);
      expectTimestampOrder(fired);
      expect(timers.eventTimerCount()).toBe(0);
    });

    it('restores pending timers from a snapshot together with keyed state, and later changes do not leak in', async () => {
      const source = track(await open(create));
      const v = source.backend.getValueState(valueState<number>('v'));
      for (const key of ['a', 'b', 'c']) {
        source.backend.setCurrentKey(key);
        v.update(1);
        source.timers.registerEventTimeTimer(key, 'w', 100);
        source.timers.registerProcessingTimeTimer(key, '', 50);
      }
      source.timers.registerEventTimeTimer('a', 'w', 200);
      expect(popAll(source.timers, 'event', 100)).toHaveLength(3);
      const snap = await snapshotOf(source, 1, store);
      // After the snapshot: not part of it.
      source.timers.registerEventTimeTimer('z', '', 150);
      source.timers.deleteEventTimeTimer('a', 'w', 200);
      popAll(source.timers, 'processing', 60);

      const restored = track(await restoreInto(create, [snap], store));
      expect(restored.timers.eventTimerCount()).toBe(1);
      expect(restored.timers.processingTimerCount()).toBe(3);
      expect(restored.timers.nextEventTime()).toBe(200);
      expect(popAll(restored.timers, 'event', 1000).map(id)).toEqual(['200|a|w']);
      expect(sortedIds(popAll(restored.timers, 'processing', 1000))).toEqual(['50|a|', '50|b|', '50|c|']);
      restored.backend.setCurrentKey('b');
      expect(restored.backend.getValueState(valueState<number>('v')).value()).toBe(1);
    });

    it('rescales: each new subtask restores exactly the timers of its key groups', async () => {
      const source = track(await open(create));
      const keys = keysIn(FULL, 300);
      keys.forEach((key, i) => source.timers.registerEventTimeTimer(key, i % 3, i));
      const snap = await snapshotOf(source, 2, store);
      const fired: Timer[] = [];
      for (let subtask = 0; subtask < 3; subtask++) {
        const range = keyGroupRangeForSubtask(subtask, 3, MAX_PARALLELISM);
        const part = track(await restoreInto(create, [snap], store, range));
        const mine = popAll(part.timers, 'event', Number.POSITIVE_INFINITY);
        for (const t of mine) expect(keyGroupRangeContains(range, keyGroupOf(t.key, MAX_PARALLELISM))).toBe(true);
        fired.push(...mine);
      }
      expect(sortedIds(fired)).toEqual(sortedIds(keys.map((key, i) => ({ key, namespace: i % 3, timestamp: i }))));
      // And back from 3 to 1.
      const parts: Snapshot[] = [];
      for (let subtask = 0; subtask < 3; subtask++) {
        const range = keyGroupRangeForSubtask(subtask, 3, MAX_PARALLELISM);
        const part = track(await restoreInto(create, [snap], store, range));
        parts.push(await snapshotOf(part, 3, store));
      }
      const merged = track(await restoreInto(create, parts, store));
      expect(merged.timers.eventTimerCount()).toBe(keys.length);
      expect(popAll(merged.timers, 'event', Number.POSITIVE_INFINITY)).toHaveLength(keys.length);
    });

    for (const [peerName, peer] of Object.entries(options.peers ?? {})) {
      it(`exchanges pending timers with ${peerName} both ways`, async () => {
        const source = track(await open(create));
        const keys = keysIn(FULL, 50);
        keys.forEach((key, i) => {
          source.timers.registerEventTimeTimer(key, 'w', 10 * i);
          if (i % 5 === 0) source.timers.registerProcessingTimeTimer(key, '', i);
        });
        popAll(source.timers, 'event', 95); // the first ten fire before the snapshot
        const snap = await snapshotOf(source, 4, store);
        const there = track(await restoreInto(peer, [snap], store));
        expect(there.timers.eventTimerCount()).toBe(40);
        expect(there.timers.processingTimerCount()).toBe(10);
        const back = track(await restoreInto(create, [await snapshotOf(there, 5, store)], store));
        const fired = popAll(back.timers, 'event', Number.POSITIVE_INFINITY);
        expect(fired.map(id)).toEqual(keys.slice(10).map((key, i) => `${10 * (i + 10)}|${key}|w`));
        expect(popAll(back.timers, 'processing', Number.POSITIVE_INFINITY)).toHaveLength(10);
      });
    }

    it('behaves like a model under random registrations, deletions, pops and snapshot/restore cycles', async () => {
      type Op =
        | { kind: 'register' | 'delete'; domain: 'event' | 'processing'; key: number; ns: number; ts: number }
        | { kind: 'pop'; domain: 'event' | 'processing'; advance: number }
        | { kind: 'restore' };
      const domain = fc.constantFrom<'event' | 'processing'>('event', 'processing');
      const op: fc.Arbitrary<Op> = fc.oneof(
        { weight: 6, arbitrary: fc.record({ kind: fc.constant('register' as const), domain, key: fc.nat(20), ns: fc.nat(2), ts: fc.integer({ min: 0, max: 60 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), domain, key: fc.nat(20), ns: fc.nat(2), ts: fc.integer({ min: 0, max: 60 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant('pop' as const), domain, advance: fc.integer({ min: 0, max: 15 }) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('restore' as const) }) },
      );
      let checkpoint = 100;
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
          let pair = await open(create);
          const model = { event: new Map<string, Timer>(), processing: new Map<string, Timer>() };
          const time = { event: -1, processing: -1 };
          try {
            for (const o of ops) {
              if (o.kind === 'register' || o.kind === 'delete') {
                const t = { key: `k${o.key}`, namespace: o.ns, timestamp: o.ts };
                const timers = pair.timers;
                if (o.kind === 'register') {
                  if (o.domain === 'event') timers.registerEventTimeTimer(t.key, t.namespace, t.timestamp);
                  else timers.registerProcessingTimeTimer(t.key, t.namespace, t.timestamp);
                  model[o.domain].set(id(t), t);
                } else {
                  if (o.domain === 'event') timers.deleteEventTimeTimer(t.key, t.namespace, t.timestamp);
                  else timers.deleteProcessingTimeTimer(t.key, t.namespace, t.timestamp);
                  model[o.domain].delete(id(t));
                }
              } else if (o.kind === 'pop') {
                time[o.domain] += o.advance;
                const limit = time[o.domain];
                const fired = popAll(pair.timers, o.domain, limit);
                const due = [...model[o.domain].values()].filter((t) => t.timestamp <= limit);
                for (const t of due) model[o.domain].delete(id(t));
                expect(sortedIds(fired)).toEqual(sortedIds(due));
                expectTimestampOrder(fired);
              } else {
                const snap = await snapshotOf(pair, checkpoint++, store);
                const next = await restoreInto(create, [snap], store);
                await pair.backend.dispose();
                pair = next;
              }
              expect(pair.timers.eventTimerCount()).toBe(model.event.size);
              expect(pair.timers.processingTimerCount()).toBe(model.processing.size);
            }
            const earliest = (m: Map<string, Timer>): number | undefined =>
              m.size === 0 ? undefined : Math.min(...[...m.values()].map((t) => t.timestamp));
            expect(pair.timers.nextEventTime()).toBe(earliest(model.event));
            expect(pair.timers.nextProcessingTime()).toBe(earliest(model.processing));
          } finally {
            await pair.backend.dispose();
          }
        }),
        { numRuns: 60 },
      );
    });
  });
}

export type { Key, Namespace };
