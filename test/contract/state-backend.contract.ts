/**
 * The contract every KeyedStateBackend must meet (in the spirit of Flink's StateBackendTestBase). A backend's test
 * file calls `runStateBackendContract(name, create)`; `create` must return a fresh, empty backend. Snapshots are
 * taken through both phases (a file-based backend's pending snapshot is completed into a temp-dir store) and
 * restored through the same store, so every handle kind goes through the same tests. `peers` are other backends
 * whose snapshots this one must restore, and which must restore this one's (memory <-> RocksDB).
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  InternalError,
  keyGroupOf,
  keyGroupRangeContains,
  keyGroupRangeForSubtask,
  type Key,
  type KeyGroupRange,
} from '../../lib/core/index.ts';
import { readHandleEntries } from '../../lib/state/snapshot-format/handle-entries.ts';
import {
  aggregatingState,
  isFileKeyedStateSnapshot,
  isPendingKeyedSnapshot,
  listState,
  mapState,
  reducingState,
  valueState,
  type AggregateFunction,
  type KeyedStateBackend,
  type KeyedStateBackendOptions,
  type KeyedStateHandle,
  type Namespace,
  type StateTtlConfig,
} from '../../lib/state/index.ts';
import { TempSharedStore } from './temp-shared-store.ts';

export type BackendFactory = (opts: KeyedStateBackendOptions) => KeyedStateBackend;

export interface ContractOptions {
  /** Other backends to exchange snapshots with, by name. */
  readonly peers?: Readonly<Record<string, BackendFactory>>;
}

const MAX_PARALLELISM = 128;
const FULL_RANGE: KeyGroupRange = { start: 0, end: MAX_PARALLELISM - 1 };

/** Average as an AggregateFunction whose accumulator is a new object on every call (values are immutable). */
const average: AggregateFunction<number, { sum: number; count: number }, number> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (v, acc) => ({ sum: acc.sum + v, count: acc.count + 1 }),
  getResult: (acc) => acc.sum / acc.count,
  merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
};
const sum = (a: number, b: number): number => a + b;

/** The first keys "k0", "k1", ... that fall into (or outside of) `range`. */
function keysIn(range: KeyGroupRange, count: number, inside = true, maxParallelism = MAX_PARALLELISM): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const key = `k${i}`;
    if (keyGroupRangeContains(range, keyGroupOf(key, maxParallelism)) === inside) keys.push(key);
  }
  return keys;
}

type Entry = [Key, Namespace, unknown];

/** A handle's entries per key group and state, whatever its kind (files are read through `store`). */
async function entriesOf(handle: KeyedStateHandle, store: TempSharedStore): Promise<Map<number, Map<string, Entry[]>>> {
  const out = new Map<number, Map<string, Entry[]>>();
  const add = (keyGroup: number, name: string, entry: Entry): void => {
    let byState = out.get(keyGroup);
    if (byState === undefined) out.set(keyGroup, (byState = new Map()));
    let list = byState.get(name);
    if (list === undefined) byState.set(name, (list = []));
    list.push(entry);
  };
  if (!isFileKeyedStateSnapshot(handle)) {
    for (const group of handle.keyGroups) {
      for (const [name, entries] of Object.entries(group.states)) for (const e of entries) add(group.keyGroup, name, e);
    }
    return out;
  }
  const latest = new Map<Key, { keyGroup: number; entries: readonly (readonly [string, Namespace, unknown])[] | undefined }>();
  await readHandleEntries(handle, store, { start: 0, end: handle.maxParallelism - 1 }, join(store.root, 'read'), (keyGroup, key, entries) => {
    latest.set(key, { keyGroup, entries });
  });
  for (const [key, { keyGroup, entries }] of latest) for (const [name, ns, value] of entries ?? []) add(keyGroup, name, [key, ns, value]);
  return out;
}

export function runStateBackendContract(name: string, create: BackendFactory, options: ContractOptions = {}): void {
  describe(`KeyedStateBackend contract: ${name}`, () => {
    const created: KeyedStateBackend[] = [];
    let time = 0;
    const now = (): number => time;
    let store: TempSharedStore;

    beforeAll(async () => {
      store = await TempSharedStore.create();
    });

    afterAll(async () => {
      await store.dispose();
    });

    function backend(range: KeyGroupRange = FULL_RANGE, maxParallelism = MAX_PARALLELISM, factory = create): KeyedStateBackend {
      const b = factory({ keyGroupRange: range, maxParallelism, now });
      created.push(b);
      return b;
    }

    /** Both phases of a snapshot: the synchronous one now, then (file-based backends) the files. */
    async function snapshotOf(b: KeyedStateBackend): Promise<KeyedStateHandle> {
      const snapshot = b.snapshot();
      return isPendingKeyedSnapshot(snapshot) ? snapshot.complete(store) : snapshot;
    }

    async function restore(b: KeyedStateBackend, handles: readonly KeyedStateHandle[]): Promise<void> {
      await b.restore(handles, store);
    }

    afterEach(async () => {
      await Promise.all(created.splice(0).map((b) => b.dispose()));
      time = 0;
    });

    describe('current key', () => {
      it('derives the key group from keyGroupOf', () => {
        const b = backend();
        for (const key of ['a', 'b', 42, 'some longer key']) {
          b.setCurrentKey(key);
          expect(b.getCurrentKey()).toBe(key);
          expect(b.getCurrentKeyGroup()).toBe(keyGroupOf(key, MAX_PARALLELISM));
        }
      });

      it('rejects keys outside the key-group range with an InternalError', () => {
        const range = keyGroupRangeForSubtask(0, 2, MAX_PARALLELISM);
        const b = backend(range);
        const [outside] = keysIn(range, 1, false);
        expect(() => b.setCurrentKey(outside as string)).toThrow(InternalError);
        const [inside] = keysIn(range, 1, true);
        b.setCurrentKey(inside as string);
        expect(keyGroupRangeContains(range, b.getCurrentKeyGroup())).toBe(true);
      });

      it('refuses state access before a key is set', () => {
        const b = backend();
        const state = b.getValueState(valueState<number>('v'));
        expect(() => b.getCurrentKey()).toThrow(InternalError);
        expect(() => state.update(1)).toThrow(InternalError);
        expect(() => state.value()).toThrow(InternalError);
      });

      it('keeps keys isolated, including 1 versus "1"', () => {
        const b = backend();
        const state = b.getValueState(valueState<string>('v'));
        b.setCurrentKey('a');
        state.update('for a');
        b.setCurrentKey(1);
        state.update('for 1');
        b.setCurrentKey('1');
        expect(state.value()).toBeUndefined();
        state.update('for "1"');
        b.setCurrentKey('a');
        expect(state.value()).toBe('for a');
        b.setCurrentKey(1);
        expect(state.value()).toBe('for 1');
        b.setCurrentKey('1');
        expect(state.value()).toBe('for "1"');
        expect(b.entryCount()).toBe(3);
      });
    });

    describe('handles', () => {
      it('returns the same handle for a name and rejects another kind under that name', () => {
        const b = backend();
        expect(b.getValueState(valueState('x'))).toBe(b.getValueState(valueState('x')));
        expect(() => b.getListState(listState('x'))).toThrow(ConfigError);
        expect(() => b.getValueState(valueState('x', { ttlMs: 5 }))).toThrow(ConfigError);
      });

      it('value state: update, read, clear', () => {
        const b = backend();
        const s = b.getValueState(valueState<{ n: number }>('v'));
        b.setCurrentKey('a');
        expect(s.value()).toBeUndefined();
        s.update({ n: 1 });
        expect(s.value()).toEqual({ n: 1 });
        s.update({ n: 2 });
        expect(s.value()).toEqual({ n: 2 });
        expect(b.entryCount()).toBe(1);
        s.clear();
        expect(s.value()).toBeUndefined();
        expect(b.entryCount()).toBe(0);
      });

      it('list state: add, addAll, update, clear; get returns a copy; an empty list leaves no entry', () => {
        const b = backend();
        const s = b.getListState(listState<number>('l'));
        b.setCurrentKey('a');
        expect(s.get()).toEqual([]);
        s.add(1);
        s.addAll([2, 3]);
        expect(s.get()).toEqual([1, 2, 3]);
        s.get().push(99);
        expect(s.get()).toEqual([1, 2, 3]);
        const input = [7, 8];
        s.update(input);
        input.push(9);
        expect(s.get()).toEqual([7, 8]);
        s.addAll([]);
        expect(s.get()).toEqual([7, 8]);
        s.update([]);
        expect(s.get()).toEqual([]);
        expect(b.entryCount()).toBe(0);
        s.addAll([]);
        expect(b.entryCount()).toBe(0);
        s.add(5);
        s.clear();
        expect(b.entryCount()).toBe(0);
      });

      it('map state: every operation; removing the last entry leaves no entry', () => {
        const b = backend();
        const s = b.getMapState(mapState<string, number>('m'));
        b.setCurrentKey('a');
        expect(s.isEmpty()).toBe(true);
        expect(s.entries()).toEqual([]);
        s.put('x', 1);
        s.putAll([
          ['y', 2],
          ['z', 3],
        ]);
        expect(s.get('x')).toBe(1);
        expect(s.get('nope')).toBeUndefined();
        expect(s.contains('y')).toBe(true);
        expect(s.contains('nope')).toBe(false);
        expect(s.entries()).toEqual([
          ['x', 1],
          ['y', 2],
          ['z', 3],
        ]);
        expect(s.keys()).toEqual(['x', 'y', 'z']);
        expect(s.values()).toEqual([1, 2, 3]);
        expect(s.isEmpty()).toBe(false);
        s.put('x', 10);
        expect(s.get('x')).toBe(10);
        s.remove('x');
        s.remove('y');
        expect(s.keys()).toEqual(['z']);
        s.remove('z');
        expect(s.isEmpty()).toBe(true);
        expect(b.entryCount()).toBe(0);
        s.put('q', 1);
        s.clear();
        expect(s.isEmpty()).toBe(true);
        expect(b.entryCount()).toBe(0);
      });

      it('map state distinguishes numeric and string user keys', () => {
        const b = backend();
        const s = b.getMapState(mapState<string | number, string>('m'));
        b.setCurrentKey('a');
        s.put(1, 'number');
        s.put('1', 'string');
        expect(s.get(1)).toBe('number');
        expect(s.get('1')).toBe('string');
      });

      it('reducing state', () => {
        const b = backend();
        const s = b.getReducingState(reducingState<number>('r', sum));
        b.setCurrentKey('a');
        expect(s.get()).toBeUndefined();
        s.add(1);
        s.add(2);
        s.add(3);
        expect(s.get()).toBe(6);
        s.clear();
        expect(s.get()).toBeUndefined();
        expect(b.entryCount()).toBe(0);
      });

      it('a throwing reduce function keeps the previous value', () => {
        const b = backend();
        const s = b.getReducingState(
          reducingState<number>('r', () => {
            throw new Error('boom');
          }),
        );
        b.setCurrentKey('a');
        s.add(1);
        expect(() => s.add(2)).toThrow('boom');
        expect(s.get()).toBe(1);
        b.setCurrentKey('b');
        expect(b.entryCount()).toBe(1);
      });

      it('aggregating state, with getAccumulator', () => {
        const b = backend();
        const s = b.getAggregatingState(aggregatingState('avg', average));
        b.setCurrentKey('a');
        expect(s.get()).toBeUndefined();
        expect(s.getAccumulator()).toBeUndefined();
        s.add(2);
        s.add(4);
        expect(s.get()).toBe(3);
        expect(s.getAccumulator()).toEqual({ sum: 6, count: 2 });
        s.clear();
        expect(s.get()).toBeUndefined();
      });

      it('keeps states of the same key apart', () => {
        const b = backend();
        const v1 = b.getValueState(valueState<number>('one'));
        const v2 = b.getValueState(valueState<number>('two'));
        b.setCurrentKey('a');
        v1.update(1);
        v2.update(2);
        expect(v1.value()).toBe(1);
        expect(v2.value()).toBe(2);
        expect(b.entryCount()).toBe(2);
      });
    });

    describe('namespaces', () => {
      it('isolates namespaces, defaults to the VOID namespace, and lists keys per namespace', () => {
        const b = backend();
        const s = b.getValueState(valueState<string>('v'));
        b.setCurrentKey('a');
        s.update('void');
        s.setCurrentNamespace(100);
        expect(s.value()).toBeUndefined();
        s.update('w100');
        s.setCurrentNamespace('w200');
        s.update('w200');
        b.setCurrentKey('b');
        s.update('b-w200');
        s.setCurrentNamespace(100);
        expect(s.value()).toBeUndefined();
        b.setCurrentKey('a');
        expect(s.value()).toBe('w100');
        s.setCurrentNamespace('');
        expect(s.value()).toBe('void');
        expect(b.keys('v', 100)).toEqual(['a']);
        expect(new Set(b.keys('v', 'w200'))).toEqual(new Set(['a', 'b']));
        expect(b.keys('v', 'none')).toEqual([]);
        expect(b.keys('no such state', 100)).toEqual([]);
        expect(b.entryCount()).toBe(4);
      });

      it('merges list namespaces into the target and clears the sources', () => {
        const b = backend();
        const s = b.getListState(listState<number>('l'));
        b.setCurrentKey('a');
        s.setCurrentNamespace(1);
        s.addAll([1, 2]);
        s.setCurrentNamespace(2);
        s.add(3);
        s.setCurrentNamespace(3);
        s.add(4);
        s.mergeNamespaces(3, [1, 2, 99]);
        expect(s.get().sort()).toEqual([1, 2, 3, 4]);
        s.setCurrentNamespace(1);
        expect(s.get()).toEqual([]);
        expect(b.entryCount()).toBe(1);
        // A target without entries receives the sources.
        s.setCurrentNamespace(5);
        s.add(5);
        s.mergeNamespaces(6, [5]);
        s.setCurrentNamespace(6);
        expect(s.get()).toEqual([5]);
        // Merging nothing changes nothing.
        s.mergeNamespaces(7, [8, 9]);
        expect(b.keys('l', 7)).toEqual([]);
        // Other keys are untouched.
        b.setCurrentKey('b');
        s.setCurrentNamespace(1);
        s.add(100);
        b.setCurrentKey('a');
        s.mergeNamespaces(3, [1]);
        b.setCurrentKey('b');
        expect(s.get()).toEqual([100]);
      });

      it('merges reducing and aggregating namespaces', () => {
        const b = backend();
        const r = b.getReducingState(reducingState<number>('r', sum));
        const a = b.getAggregatingState(aggregatingState('a', average));
        b.setCurrentKey('k');
        for (const [ns, v] of [
          [1, 10],
          [2, 20],
          [3, 30],
        ] as const) {
          r.setCurrentNamespace(ns);
          r.add(v);
          a.setCurrentNamespace(ns);
          a.add(v);
        }
        r.setCurrentNamespace(1);
        r.mergeNamespaces(1, [2, 3]);
        expect(r.get()).toBe(60);
        r.setCurrentNamespace(2);
        expect(r.get()).toBeUndefined();
        a.mergeNamespaces(10, [1, 2, 3]);
        a.setCurrentNamespace(10);
        expect(a.getAccumulator()).toEqual({ sum: 60, count: 3 });
        expect(a.get()).toBe(20);
        a.setCurrentNamespace(1);
        expect(a.get()).toBeUndefined();
        expect(b.entryCount()).toBe(2);
      });
    });

    describe('TTL', () => {
      const write: StateTtlConfig = { ttlMs: 100 };
      const read: StateTtlConfig = { ttlMs: 100, updateType: 'onReadAndWrite' };

      it('value state, onCreateAndWrite: reads do not renew; expired values are gone and removed', () => {
        const b = backend();
        const s = b.getValueState(valueState<string>('v', write));
        b.setCurrentKey('a');
        s.update('x');
        time = 99;
        expect(s.value()).toBe('x');
        time = 100;
        expect(s.value()).toBeUndefined();
        expect(b.entryCount()).toBe(0);
        s.update('y');
        time = 150;
        s.update('z');
        time = 249;
        expect(s.value()).toBe('z');
        time = 250;
        expect(s.value()).toBeUndefined();
      });

      it('value state, onReadAndWrite: reads renew', () => {
        const b = backend();
        const s = b.getValueState(valueState<string>('v', read));
        b.setCurrentKey('a');
        s.update('x');
        time = 99;
        expect(s.value()).toBe('x');
        time = 198;
        expect(s.value()).toBe('x');
        time = 298;
        expect(s.value()).toBeUndefined();
      });

      it('list state: TTL per element', () => {
        const b = backend();
        const s = b.getListState(listState<string>('l', write));
        b.setCurrentKey('a');
        s.add('a');
        time = 50;
        s.addAll(['b', 'c']);
        time = 99;
        expect(s.get()).toEqual(['a', 'b', 'c']);
        time = 100;
        expect(s.get()).toEqual(['b', 'c']);
        time = 150;
        expect(s.get()).toEqual([]);
        expect(b.entryCount()).toBe(0);
        s.update(['d']);
        time = 249;
        expect(s.get()).toEqual(['d']);
      });

      it('list state, onReadAndWrite: reading renews the elements read', () => {
        const b = backend();
        const s = b.getListState(listState<string>('l', read));
        b.setCurrentKey('a');
        s.add('a');
        time = 90;
        expect(s.get()).toEqual(['a']);
        time = 180;
        expect(s.get()).toEqual(['a']);
        time = 280;
        expect(s.get()).toEqual([]);
      });

      it('map state: TTL per entry, for every read path', () => {
        const b = backend();
        const s = b.getMapState(mapState<string, number>('m', write));
        b.setCurrentKey('a');
        s.put('old', 1);
        time = 50;
        s.putAll([['new', 2]]);
        time = 100;
        expect(s.get('old')).toBeUndefined();
        expect(s.contains('old')).toBe(false);
        expect(s.entries()).toEqual([['new', 2]]);
        expect(s.keys()).toEqual(['new']);
        expect(s.values()).toEqual([2]);
        expect(s.isEmpty()).toBe(false);
        time = 150;
        expect(s.isEmpty()).toBe(true);
        expect(b.entryCount()).toBe(0);
      });

      it('map state, onReadAndWrite: get renews the entry read', () => {
        const b = backend();
        const s = b.getMapState(mapState<string, number>('m', read));
        b.setCurrentKey('a');
        s.put('x', 1);
        s.put('y', 2);
        time = 90;
        expect(s.get('x')).toBe(1);
        time = 150;
        expect(s.entries()).toEqual([['x', 1]]);
      });

      it('reducing and aggregating state restart after expiry', () => {
        const b = backend();
        const r = b.getReducingState(reducingState<number>('r', sum, write));
        const a = b.getAggregatingState(aggregatingState('a', average, write));
        b.setCurrentKey('k');
        r.add(1);
        a.add(1);
        time = 50;
        r.add(2);
        a.add(3);
        time = 149;
        expect(r.get()).toBe(3);
        expect(a.get()).toBe(2);
        time = 150;
        expect(r.get()).toBeUndefined();
        expect(a.getAccumulator()).toBeUndefined();
        r.add(5);
        a.add(5);
        expect(r.get()).toBe(5);
        expect(a.get()).toBe(5);
      });

      it('reducing state, onReadAndWrite: reads renew', () => {
        const b = backend();
        const r = b.getReducingState(reducingState<number>('r', sum, read));
        b.setCurrentKey('k');
        r.add(1);
        time = 90;
        expect(r.get()).toBe(1);
        time = 180;
        expect(r.get()).toBe(1);
        time = 280;
        expect(r.get()).toBeUndefined();
      });

      it('merges namespaces ignoring expired sources', () => {
        const b = backend();
        const r = b.getReducingState(reducingState<number>('r', sum, write));
        const l = b.getListState(listState<number>('l', write));
        b.setCurrentKey('k');
        r.setCurrentNamespace(1);
        r.add(1);
        l.setCurrentNamespace(1);
        l.add(1);
        time = 60;
        r.setCurrentNamespace(2);
        r.add(2);
        l.setCurrentNamespace(2);
        l.add(2);
        time = 120;
        r.setCurrentNamespace(3);
        r.add(3);
        r.mergeNamespaces(3, [1, 2]);
        expect(r.get()).toBe(5);
        l.mergeNamespaces(3, [1, 2]);
        l.setCurrentNamespace(3);
        expect(l.get()).toEqual([2]);
        r.setCurrentNamespace(1);
        expect(r.get()).toBeUndefined();
      });

      it('snapshots drop expired entries and keep live ones with their timestamps', async () => {
        const b = backend();
        const v = b.getValueState(valueState<string>('v', write));
        const l = b.getListState(listState<string>('l', write));
        const m = b.getMapState(mapState<string, string>('m', write));
        b.setCurrentKey('old');
        v.update('x');
        l.add('x');
        m.put('x', 'x');
        time = 60;
        b.setCurrentKey('new');
        v.update('y');
        l.add('y');
        m.put('y', 'y');
        b.setCurrentKey('old');
        l.add('z');
        m.put('z', 'z');
        time = 100;
        const snapshot = await snapshotOf(b);
        const restored = backend();
        await restore(restored, [snapshot]);
        const rv = restored.getValueState(valueState<string>('v', write));
        const rl = restored.getListState(listState<string>('l', write));
        const rm = restored.getMapState(mapState<string, string>('m', write));
        expect(restored.entryCount()).toBe(5);
        restored.setCurrentKey('old');
        expect(rv.value()).toBeUndefined();
        expect(rl.get()).toEqual(['z']);
        expect(rm.entries()).toEqual([['z', 'z']]);
        restored.setCurrentKey('new');
        expect(rv.value()).toBe('y');
        time = 159;
        expect(rl.get()).toEqual(['y']);
        time = 160;
        expect(rm.get('y')).toBeUndefined();
        expect(rv.value()).toBeUndefined();
      });
    });

    describe('snapshots', () => {
      function fill(b: KeyedStateBackend, keys: readonly Key[], indexOf = (key: Key) => keys.indexOf(key)): void {
        const v = b.getValueState(valueState<string>('v'));
        const l = b.getListState(listState<number>('l'));
        const m = b.getMapState(mapState<string, number>('m'));
        const r = b.getReducingState(reducingState<number>('r', sum));
        const a = b.getAggregatingState(aggregatingState('a', average));
        for (const key of keys) {
          const i = indexOf(key);
          b.setCurrentKey(key);
          v.update(`value of ${key}`);
          l.addAll([i, i + 1]);
          m.put('i', i);
          m.put('twice', 2 * i);
          r.add(i);
          r.add(10);
          a.add(i);
          v.setCurrentNamespace(7);
          v.update(`ns7 of ${key}`);
          v.setCurrentNamespace('');
        }
      }

      function expectFilled(b: KeyedStateBackend, keys: readonly Key[], indexOf: (key: Key) => number): void {
        const v = b.getValueState(valueState<string>('v'));
        const l = b.getListState(listState<number>('l'));
        const m = b.getMapState(mapState<string, number>('m'));
        const r = b.getReducingState(reducingState<number>('r', sum));
        const a = b.getAggregatingState(aggregatingState('a', average));
        for (const key of keys) {
          const i = indexOf(key);
          b.setCurrentKey(key);
          expect(v.value()).toBe(`value of ${key}`);
          expect(l.get()).toEqual([i, i + 1]);
          expect(m.entries()).toEqual([
            ['i', i],
            ['twice', 2 * i],
          ]);
          expect(r.get()).toBe(i + 10);
          expect(a.getAccumulator()).toEqual({ sum: i, count: 1 });
          v.setCurrentNamespace(7);
          expect(v.value()).toBe(`ns7 of ${key}`);
          v.setCurrentNamespace('');
        }
      }

      const keys = ['a', 'b', 'c', 3, 4, 'longer key'];
      const indexOfKey = (key: Key): number => keys.indexOf(key as never);

      it('is organised by key group', async () => {
        const b = backend();
        fill(b, keys);
        const snapshot = await snapshotOf(b);
        expect(snapshot.maxParallelism).toBe(MAX_PARALLELISM);
        const groups = await entriesOf(snapshot, store);
        expect(new Set(groups.keys())).toEqual(new Set(keys.map((k) => keyGroupOf(k, MAX_PARALLELISM))));
        for (const [keyGroup, byState] of groups) {
          for (const entries of byState.values()) {
            for (const [key] of entries) expect(keyGroupOf(key, MAX_PARALLELISM)).toBe(keyGroup);
          }
        }
      });

      it('is not changed by later writes', async () => {
        const b = backend();
        fill(b, keys);
        const snapshot = await snapshotOf(b);
        const frozen = structuredClone(snapshot);
        const v = b.getValueState(valueState<string>('v'));
        const l = b.getListState(listState<number>('l'));
        const m = b.getMapState(mapState<string, number>('m'));
        const r = b.getReducingState(reducingState<number>('r', sum));
        const a = b.getAggregatingState(aggregatingState('a', average));
        b.setCurrentKey('a');
        v.update('changed');
        l.add(1000);
        m.put('i', 1000);
        m.put('new', 1);
        r.add(1000);
        a.add(1000);
        l.mergeNamespaces('', []);
        b.setCurrentKey('b');
        v.clear();
        l.clear();
        m.remove('i');
        b.setCurrentKey('new key');
        v.update('new');
        // A second snapshot must not change what the first one restores to.
        await snapshotOf(b);
        expect(snapshot).toEqual(frozen);
        const restored = backend();
        await restore(restored, [snapshot]);
        expectFilled(restored, keys, indexOfKey);
        expect(restored.keys('v', '').length).toBe(keys.length);
      });

      it('a snapshot taken before an async phase of an earlier one completes keeps its own state', async () => {
        const b = backend();
        const v = b.getValueState(valueState<number>('v'));
        b.setCurrentKey('a');
        v.update(1);
        const first = b.snapshot();
        v.update(2);
        const second = b.snapshot();
        v.update(3);
        const done1 = isPendingKeyedSnapshot(first) ? await first.complete(store) : first;
        const done2 = isPendingKeyedSnapshot(second) ? await second.complete(store) : second;
        for (const [handle, expected] of [
          [done1, 1],
          [done2, 2],
        ] as const) {
          const r = backend();
          await restore(r, [handle]);
          r.setCurrentKey('a');
          expect(r.getValueState(valueState<number>('v')).value()).toBe(expected);
        }
      });

      it('restores into a fresh backend, whether handles are created before or after restore', async () => {
        const b = backend();
        fill(b, keys);
        const snapshot = await snapshotOf(b);

        const late = backend();
        await restore(late, [snapshot]);
        expect(late.entryCount()).toBe(b.entryCount());
        expectFilled(late, keys, indexOfKey);

        const early = backend();
        early.getListState(listState<number>('l'));
        early.getMapState(mapState<string, number>('m'));
        await restore(early, [snapshot]);
        expectFilled(early, keys, indexOfKey);

        // Restored state is independent of the snapshot object it came from.
        const frozen = structuredClone(snapshot);
        early.setCurrentKey('a');
        early.getListState(listState<number>('l')).add(5);
        early.getMapState(mapState<string, number>('m')).put('more', 5);
        late.setCurrentKey('a');
        late.getListState(listState<number>('l')).add(5);
        late.getMapState(mapState<string, number>('m')).put('more', 5);
        expect(snapshot).toEqual(frozen);
      });

      it('survives a structured-clone round trip (plain data)', async () => {
        const b = backend();
        fill(b, keys);
        const copy = structuredClone(await snapshotOf(b));
        const restored = backend();
        await restore(restored, [copy]);
        expectFilled(restored, keys, indexOfKey);
      });

      it('an unregistered restored state survives another snapshot', async () => {
        const b = backend();
        fill(b, keys);
        const second = backend();
        await restore(second, [await snapshotOf(b)]);
        const third = backend();
        await restore(third, [await snapshotOf(second)]);
        expectFilled(third, keys, indexOfKey);
      });

      it('keeps values that msgpack and structured clone distinguish', async () => {
        const b = backend();
        const v = b.getValueState(valueState<unknown>('v'));
        const value = { map: new Map<unknown, unknown>([[1, 'one'], ['1', 'string one']]), set: new Set([1, 2]), date: new Date(5), nothing: undefined, big: 2n ** 70n };
        b.setCurrentKey('k');
        v.update(value);
        b.setCurrentKey(7);
        v.update([null, -1.5, Number.NaN, Number.POSITIVE_INFINITY, 'text']);
        const restored = backend();
        await restore(restored, [await snapshotOf(b)]);
        const rv = restored.getValueState(valueState<unknown>('v'));
        restored.setCurrentKey('k');
        expect(rv.value()).toEqual(value);
        restored.setCurrentKey(7);
        expect(rv.value()).toEqual([null, -1.5, Number.NaN, Number.POSITIVE_INFINITY, 'text']);
        restored.setCurrentKey('7');
        expect(rv.value()).toBeUndefined();
      });

      it('rejects a snapshot with another maxParallelism', async () => {
        const b = backend({ start: 0, end: 63 }, 64);
        const other = backend();
        fill(other, keys);
        const snapshot = await snapshotOf(other);
        await expect(Promise.resolve().then(() => restore(b, [snapshot]))).rejects.toThrow(ConfigError);
        expect(b.entryCount()).toBe(0);
      });

      const allKeys: Key[] = [];
      for (let i = 0; i < 300; i++) allKeys.push(i % 3 === 0 ? i : `key-${i}`);
      const indexOfAll = (key: Key): number => allKeys.indexOf(key);
      const subtaskOf = (key: Key, parallelism: number): number => {
        const kg = keyGroupOf(key, MAX_PARALLELISM);
        for (let s = 0; s < parallelism; s++) {
          if (keyGroupRangeContains(keyGroupRangeForSubtask(s, parallelism, MAX_PARALLELISM), kg)) return s;
        }
        throw new Error('unreachable');
      };

      /** Fills `from` subtasks, snapshots them, restores every snapshot into `to` subtasks and checks each key. */
      async function rescale(from: number, to: number, source = create, target = create): Promise<void> {
        const before = Array.from({ length: from }, (_, s) => backend(keyGroupRangeForSubtask(s, from, MAX_PARALLELISM), MAX_PARALLELISM, source));
        for (const [s, b] of before.entries()) fill(b, allKeys.filter((k) => subtaskOf(k, from) === s), indexOfAll);
        const snapshots: KeyedStateHandle[] = [];
        for (const b of before) snapshots.push(await snapshotOf(b));

        const after = Array.from({ length: to }, (_, s) => backend(keyGroupRangeForSubtask(s, to, MAX_PARALLELISM), MAX_PARALLELISM, target));
        for (const b of after) await restore(b, snapshots);

        let total = 0;
        for (const [s, b] of after.entries()) {
          const mine = allKeys.filter((k) => subtaskOf(k, to) === s);
          expect(mine.length).toBeGreaterThan(0);
          expectFilled(b, mine, indexOfAll);
          total += b.entryCount();
          // Keys of other subtasks are not here: their key groups are outside the range.
          expect(new Set(b.keys('v', ''))).toEqual(new Set(mine));
        }
        expect(total).toBe(before.reduce((n, b) => n + b.entryCount(), 0));
      }

      it('rescales from parallelism 2 to 3: every key is restored exactly where its key group lives', async () => {
        await rescale(2, 3);
      });

      it('rescales two halves into one and one into two', async () => {
        await rescale(2, 1);
        await rescale(1, 2);
      });

      for (const [peerName, peer] of Object.entries(options.peers ?? {})) {
        it(`exchanges snapshots with ${peerName}, both ways and rescaled`, async () => {
          const b = backend();
          fill(b, keys);
          const intoPeer = backend(FULL_RANGE, MAX_PARALLELISM, peer);
          await restore(intoPeer, [await snapshotOf(b)]);
          expectFilled(intoPeer, keys, indexOfKey);
          expect(intoPeer.entryCount()).toBe(b.entryCount());
          const back = backend();
          await restore(back, [await snapshotOf(intoPeer)]);
          expectFilled(back, keys, indexOfKey);
          expect(back.entryCount()).toBe(b.entryCount());
          await rescale(2, 3, create, peer);
          await rescale(3, 2, peer, create);
        });
      }
    });

    it('dispose drops all state', async () => {
      const b = backend();
      const v = b.getValueState(valueState<number>('v'));
      b.setCurrentKey('a');
      v.update(1);
      await b.dispose();
      expect(b.entryCount()).toBe(0);
    });
  });
}
