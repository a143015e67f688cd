import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Key } from '../../../lib/core/index.ts';
import {
  aggregatingState,
  isPendingKeyedSnapshot,
  listState,
  mapState,
  reducingState,
  valueState,
  type AggregateFunction,
  type KeyedStateBackend,
  type KeyedStateHandle,
  type KeyedStateSnapshot,
  type Namespace,
} from '../../../lib/state/index.ts';
import { MemoryKeyedStateBackend } from '../../../lib/state/memory/memory-backend.ts';
import type { RocksDbKeyedStateBackend } from '../../../lib/state/rocksdb/index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, FULL_RANGE, MAX_PARALLELISM, removeDir, rocksBackend } from './rocksdb-test-env.ts';

/*
 * Model-based check of the write-behind cache: random operations run against the RocksDB backend with a cache
 * of 1-3 keys (so nearly every access evicts, writes RocksDB and reads it back, through prefetch or the
 * synchronous fallback) and against the memory backend; every observable result must be identical, including
 * across checkpoints (with promotion of completed generations) and restores.
 */

const average: AggregateFunction<number, { s: number; c: number }, number> = {
  createAccumulator: () => ({ s: 0, c: 0 }),
  add: (v, a) => ({ s: a.s + v, c: a.c + 1 }),
  getResult: (a) => a.s / a.c,
  merge: (a, b) => ({ s: a.s + b.s, c: a.c + b.c }),
};
const ttl = { ttlMs: 50 };

const descriptors = {
  v: valueState<number>('v'),
  l: listState<number>('l'),
  m: mapState<Key, number>('m'),
  r: reducingState<number>('r', (a, b) => a + b),
  g: aggregatingState('g', average),
  tv: valueState<number>('tv', ttl),
  tl: listState<number>('tl', ttl),
  tm: mapState<Key, number>('tm', { ttlMs: 50, updateType: 'onReadAndWrite' }),
};

type Op =
  | { op: 'key'; key: Key }
  | { op: 'prefetch'; keys: Key[] }
  | { op: 'ns'; ns: Namespace }
  | { op: 'time'; dt: number }
  | { op: 'vset' | 'tset' | 'ladd' | 'radd' | 'gadd' | 'tladd'; x: number }
  | { op: 'vget' | 'vclear' | 'tget' | 'lget' | 'lclear' | 'tlget' | 'rget' | 'gget' | 'mentries' | 'misEmpty' | 'tmentries' | 'count' }
  | { op: 'lupdate' | 'laddAll'; xs: number[] }
  | { op: 'mput' | 'tmput'; uk: Key; x: number }
  | { op: 'mremove' | 'mget' | 'tmget'; uk: Key }
  | { op: 'lmerge' | 'rmerge' | 'gmerge'; target: Namespace; sources: Namespace[] }
  | { op: 'keys'; state: 'v' | 'l' | 'm' | 'tv'; ns: Namespace }
  | { op: 'checkpoint' }
  | { op: 'finish'; notify: boolean }
  | { op: 'reopen' };

const keyArb = fc.constantFrom<Key>('a', 'b', 'c', 'd', 'e', 1, 2, '1', 'ünï', 'long key '.repeat(4));
const nsArb = fc.constantFrom<Namespace>('', 1, 2, 'w');
const ukArb = fc.constantFrom<Key>('x', 'y', 1, '1');
const small = fc.integer({ min: -5, max: 20 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: keyArb.map((key) => ({ op: 'key' as const, key })) },
  { weight: 2, arbitrary: fc.array(keyArb, { maxLength: 6 }).map((keys) => ({ op: 'prefetch' as const, keys })) },
  { weight: 2, arbitrary: nsArb.map((ns) => ({ op: 'ns' as const, ns })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((dt) => ({ op: 'time' as const, dt })) },
  { weight: 8, arbitrary: fc.record({ op: fc.constantFrom('vset', 'tset', 'ladd', 'radd', 'gadd', 'tladd'), x: small }) as fc.Arbitrary<Op> },
  {
    weight: 8,
    arbitrary: fc
      .constantFrom('vget', 'vclear', 'tget', 'lget', 'lclear', 'tlget', 'rget', 'gget', 'mentries', 'misEmpty', 'tmentries', 'count')
      .map((op) => ({ op }) as Op),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('lupdate', 'laddAll'), xs: fc.array(small, { maxLength: 3 }) }) as fc.Arbitrary<Op> },
  { weight: 4, arbitrary: fc.record({ op: fc.constantFrom('mput', 'tmput'), uk: ukArb, x: small }) as fc.Arbitrary<Op> },
  { weight: 3, arbitrary: fc.record({ op: fc.constantFrom('mremove', 'mget', 'tmget'), uk: ukArb }) as fc.Arbitrary<Op> },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constantFrom('lmerge', 'rmerge', 'gmerge'), target: nsArb, sources: fc.array(nsArb, { maxLength: 3 }) }) as fc.Arbitrary<Op>,
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('keys' as const), state: fc.constantFrom('v', 'l', 'm', 'tv'), ns: nsArb }) as fc.Arbitrary<Op> },
  { weight: 1, arbitrary: fc.constant({ op: 'checkpoint' as const }) },
  { weight: 1, arbitrary: fc.boolean().map((notify) => ({ op: 'finish' as const, notify })) },
  { weight: 1, arbitrary: fc.constant({ op: 'reopen' as const }) },
);

/** Runs `op` on a backend and returns what it observed (or the error's class), for comparison. */
function apply(b: KeyedStateBackend, op: Op, ns: Namespace): unknown {
  const handle = <H extends { setCurrentNamespace(ns: Namespace): void }>(h: H): H => {
    h.setCurrentNamespace(ns);
    return h;
  };
  try {
    switch (op.op) {
      case 'vset':
        return handle(b.getValueState(descriptors.v)).update(op.x);
      case 'vget':
        return handle(b.getValueState(descriptors.v)).value();
      case 'vclear':
        return handle(b.getValueState(descriptors.v)).clear();
      case 'tset':
        return handle(b.getValueState(descriptors.tv)).update(op.x);
      case 'tget':
        return handle(b.getValueState(descriptors.tv)).value();
      case 'ladd':
        return handle(b.getListState(descriptors.l)).add(op.x);
      case 'laddAll':
        return handle(b.getListState(descriptors.l)).addAll(op.xs);
      case 'lupdate':
        return handle(b.getListState(descriptors.l)).update(op.xs);
      case 'lget':
        return handle(b.getListState(descriptors.l)).get();
      case 'lclear':
        return handle(b.getListState(descriptors.l)).clear();
      case 'lmerge':
        return handle(b.getListState(descriptors.l)).mergeNamespaces(op.target, op.sources);
      case 'tladd':
        return handle(b.getListState(descriptors.tl)).add(op.x);
      case 'tlget':
        return handle(b.getListState(descriptors.tl)).get();
      case 'mput':
        return handle(b.getMapState(descriptors.m)).put(op.uk, op.x);
      case 'mremove':
        return handle(b.getMapState(descriptors.m)).remove(op.uk);
      case 'mget':
        return handle(b.getMapState(descriptors.m)).get(op.uk);
      case 'mentries':
        return handle(b.getMapState(descriptors.m)).entries();
      case 'misEmpty':
        return handle(b.getMapState(descriptors.m)).isEmpty();
      case 'tmput':
        return handle(b.getMapState(descriptors.tm)).put(op.uk, op.x);
      case 'tmget':
        return handle(b.getMapState(descriptors.tm)).get(op.uk);
      case 'tmentries':
        return handle(b.getMapState(descriptors.tm)).entries();
      case 'radd':
        return handle(b.getReducingState(descriptors.r)).add(op.x);
      case 'rget':
        return handle(b.getReducingState(descriptors.r)).get();
      case 'rmerge':
        return handle(b.getReducingState(descriptors.r)).mergeNamespaces(op.target, op.sources);
      case 'gadd':
        return handle(b.getAggregatingState(descriptors.g)).add(op.x);
      case 'gget':
        return handle(b.getAggregatingState(descriptors.g)).getAccumulator();
      case 'gmerge':
        return handle(b.getAggregatingState(descriptors.g)).mergeNamespaces(op.target, op.sources);
      case 'count':
        return b.entryCount();
      case 'keys':
        return b
          .keys(descriptors[op.state].name, op.ns)
          .map((k) => `${typeof k}:${String(k)}`)
          .sort();
      default:
        return undefined;
    }
  } catch (err) {
    return { threw: (err as Error).constructor.name };
  }
}

describe('RocksDB write-behind cache', () => {
  let stateDir: string;
  let store: TempSharedStore;

  beforeAll(async () => {
    stateDir = fastTempDir('sluice-rocks-cache-');
    store = await TempSharedStore.create();
  });

  afterAll(async () => {
    removeDir(stateDir);
    await store.dispose();
  });

  async function snapshotOf(b: KeyedStateBackend, id: number): Promise<KeyedStateHandle> {
    const s = b.snapshot(id);
    return isPendingKeyedSnapshot(s) ? s.complete(store) : s;
  }

  it('gives exactly the memory backend results with a cache of 1-3 keys, across checkpoints and restores', async () => {
    const totals = { evicted: 0, syncReads: 0, prefetched: 0 };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(opArb, { minLength: 20, maxLength: 120 }), async (cacheMaxKeys, ops) => {
        let time = 0;
        const now = (): number => time;
        // Opened before use: before it opens, a fresh backend keeps everything cached (nothing to evict into).
        const newRocks = async (): Promise<RocksDbKeyedStateBackend> => {
          const b = rocksBackend({ stateDir, now, options: { cacheMaxKeys } });
          await b.whenIdle();
          return b;
        };
        let rocks = await newRocks();
        let memory = new MemoryKeyedStateBackend({ keyGroupRange: FULL_RANGE, maxParallelism: MAX_PARALLELISM, now });
        let ns: Namespace = '';
        let key: Key | undefined;
        let checkpointId = 0;
        const pending: { id: number; snapshot: ReturnType<KeyedStateBackend['snapshot']>; expected: KeyedStateSnapshot }[] = [];
        try {
          for (const [step, op] of ops.entries()) {
            if (op.op === 'time') time += op.dt;
            else if (op.op === 'ns') ns = op.ns;
            else if (op.op === 'key') {
              key = op.key;
              rocks.setCurrentKey(key);
              memory.setCurrentKey(key);
            } else if (op.op === 'prefetch') {
              await rocks.prefetch(op.keys);
            } else if (op.op === 'checkpoint') {
              // The asynchronous phase runs later ('finish'): writes in between must not reach this checkpoint.
              const id = ++checkpointId;
              pending.push({ id, snapshot: rocks.snapshot(id), expected: memory.snapshot() });
            } else if (op.op === 'finish') {
              const oldest = pending.shift();
              if (oldest === undefined) continue;
              const handle = isPendingKeyedSnapshot(oldest.snapshot) ? await oldest.snapshot.complete(store) : oldest.snapshot;
              if (op.notify) rocks.notifyCheckpointComplete(oldest.id);
              await rocks.whenIdle();
              // What the checkpoint holds is what memory held at its synchronous phase.
              const check = await newRocks();
              const reference = new MemoryKeyedStateBackend({ keyGroupRange: FULL_RANGE, maxParallelism: MAX_PARALLELISM, now });
              try {
                await check.restore([handle], store);
                reference.restore([oldest.expected]);
                for (const k of ['a', 'b', 'c', 'd', 'e', 1, 2, '1'] as Key[]) {
                  for (const probe of [{ op: 'vget' }, { op: 'lget' }, { op: 'mentries' }, { op: 'rget' }, { op: 'gget' }] as Op[]) {
                    check.setCurrentKey(k);
                    reference.setCurrentKey(k);
                    for (const pns of ['', 1, 2, 'w'] as Namespace[]) {
                      expect(apply(check, probe, pns), `checkpoint ${oldest.id} ${String(k)} ${probe.op}`).toEqual(apply(reference, probe, pns));
                    }
                  }
                }
              } finally {
                await check.dispose();
              }
            } else if (op.op === 'reopen') {
              for (const p of pending.splice(0)) if (isPendingKeyedSnapshot(p.snapshot)) await p.snapshot.complete(store);
              const rocksHandle = await snapshotOf(rocks, ++checkpointId);
              const memoryHandle = memory.snapshot();
              await rocks.dispose();
              rocks = await newRocks();
              await rocks.restore([rocksHandle], store);
              memory = new MemoryKeyedStateBackend({ keyGroupRange: FULL_RANGE, maxParallelism: MAX_PARALLELISM, now });
              memory.restore([memoryHandle]);
              if (key !== undefined) {
                rocks.setCurrentKey(key);
                memory.setCurrentKey(key);
              }
            } else {
              const expected = apply(memory, op, ns);
              const actual = apply(rocks, op, ns);
              if (op.op === 'count') {
                // The memory backend drops expired entries from snapshots; RocksDB counts them until touched,
                // like memory does between restores. Compare what both can see: without TTL states the counts match.
                continue;
              }
              expect(actual, `step ${step}: ${JSON.stringify(op)}`).toEqual(expected);
            }
          }
          expect(rocks.metrics().cachedKeys).toBeLessThanOrEqual(cacheMaxKeys + 10);
          const m = rocks.metrics();
          totals.evicted += m.evictedKeys;
          totals.syncReads += m.syncReads;
          totals.prefetched += m.prefetchedKeys;
        } finally {
          for (const p of pending.splice(0)) if (isPendingKeyedSnapshot(p.snapshot)) await p.snapshot.complete(store).catch(() => undefined);
          await rocks.dispose();
        }
      }),
      // A fixed seed (SLUICE_FC_SEED explores others): the coverage counts below depend on the generated runs, and a
      // random seed now and then generated too few cache misses for them.
      { numRuns: Number(process.env.SLUICE_FC_RUNS ?? 60), seed: Number(process.env.SLUICE_FC_SEED ?? 20261202) },
    );
    // The runs went through RocksDB, not only through the cache (a run of 20 to 120 operations on 1 to 3 cached keys
    // misses the cache a few times at least; the bounds leave room for the write-behind cache's timing).
    expect(totals.evicted, JSON.stringify(totals)).toBeGreaterThan(50);
    expect(totals.syncReads, JSON.stringify(totals)).toBeGreaterThan(30);
    expect(totals.prefetched, JSON.stringify(totals)).toBeGreaterThan(10);
  });

  it('counts entries exactly like the memory backend, through evictions, checkpoints and restores', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('put' as const), key: keyArb, ns: nsArb, x: small }),
            fc.record({ op: fc.constant('clear' as const), key: keyArb, ns: nsArb }),
            fc.record({ op: fc.constant('madd' as const), key: keyArb, uk: ukArb }),
            fc.constant({ op: 'reopen' as const }),
            fc.constant({ op: 'checkpoint' as const }),
          ),
          { maxLength: 80 },
        ),
        async (ops) => {
          const now = (): number => 0;
          let rocks = rocksBackend({ stateDir, now, options: { cacheMaxKeys: 2 } });
          await rocks.whenIdle();
          const memory = new MemoryKeyedStateBackend({ keyGroupRange: FULL_RANGE, maxParallelism: MAX_PARALLELISM, now });
          let id = 0;
          try {
            for (const op of ops) {
              if (op.op === 'reopen') {
                const handle = await snapshotOf(rocks, ++id);
                await rocks.dispose();
                rocks = rocksBackend({ stateDir, now, options: { cacheMaxKeys: 2 } });
                await rocks.whenIdle();
                await rocks.restore([handle], store);
              } else if (op.op === 'checkpoint') {
                await snapshotOf(rocks, ++id);
                rocks.notifyCheckpointComplete(id);
              } else {
                for (const b of [rocks, memory] as KeyedStateBackend[]) {
                  b.setCurrentKey(op.key);
                  if (op.op === 'madd') b.getMapState(descriptors.m).put(op.uk, 1);
                  else {
                    const v = b.getValueState(descriptors.v);
                    v.setCurrentNamespace(op.ns);
                    if (op.op === 'put') v.update(op.x);
                    else v.clear();
                  }
                }
              }
              expect(rocks.entryCount()).toBe(memory.entryCount());
            }
            await rocks.whenIdle();
            expect(rocks.entryCount()).toBe(memory.entryCount());
          } finally {
            await rocks.dispose();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('reads a batch of misses with one multi-get and falls back to synchronous reads only for keys not prefetched', async () => {
    const b = rocksBackend({ stateDir, options: { cacheMaxKeys: 100 } });
    try {
      const v = b.getValueState(descriptors.v);
      const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
      await b.whenIdle();
      // Like an operator: one prefetch per batch of 100 records, then synchronous access.
      for (let start = 0; start < keys.length; start += 100) {
        const batch = keys.slice(start, start + 100);
        await b.prefetch(batch);
        for (const [i, k] of batch.entries()) {
          b.setCurrentKey(k);
          v.update(start + i);
        }
      }
      expect(b.metrics().syncReads).toBe(0);
      const before = b.metrics().prefetchReads;
      await b.prefetch(keys.slice(0, 50));
      const after = b.metrics();
      expect(after.prefetchReads).toBe(before + 1);
      expect(after.prefetchedKeys).toBeGreaterThan(0);
      for (const [i, k] of keys.slice(0, 50).entries()) {
        b.setCurrentKey(k);
        expect(v.value()).toBe(i);
      }
      expect(b.metrics().syncReads).toBe(0);
      // Everything prefetched stays cached: a second prefetch of the same keys reads nothing.
      expect(b.prefetch(keys.slice(0, 50))).toBeUndefined();
      b.setCurrentKey('k999');
      expect(v.value()).toBe(999);
      expect(b.metrics().syncReads).toBeLessThanOrEqual(1);
      expect(b.metrics().cachedKeys).toBeLessThanOrEqual(100 + 12 + 1);
    } finally {
      await b.dispose();
    }
  });
});
