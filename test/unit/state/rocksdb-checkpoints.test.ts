import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  isPendingKeyedSnapshot,
  listState,
  valueState,
  type FileKeyedStateSnapshot,
  type KeyedStateBackend,
  type SharedStateFileRef,
  type SharedStateStore,
} from '../../../lib/state/index.ts';
import { StateFileReader } from '../../../lib/state/snapshot-format/state-file-reader.ts';
import type { StateFileKind } from '../../../lib/state/snapshot-format/state-file-format.ts';
import type { RocksDbKeyedStateBackend, RocksDbStateOptions } from '../../../lib/state/rocksdb/index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, removeDir, rocksBackend } from './rocksdb-test-env.ts';

describe('RocksDB incremental checkpoints', () => {
  let stateDir: string;
  let store: TempSharedStore;
  const created: KeyedStateBackend[] = [];
  let time = 0;

  beforeAll(async () => {
    stateDir = fastTempDir('sluice-rocks-cp-');
    store = await TempSharedStore.create();
  });

  afterEach(async () => {
    await Promise.all(created.splice(0).map((b) => b.dispose()));
    time = 0;
  });

  afterAll(async () => {
    removeDir(stateDir);
    await store.dispose();
  });

  async function open(options: RocksDbStateOptions = {}): Promise<RocksDbKeyedStateBackend> {
    const b = rocksBackend({ stateDir, now: () => time, options: { cacheMaxKeys: 50, ...options } });
    created.push(b);
    await b.whenIdle();
    return b;
  }

  async function checkpoint(b: KeyedStateBackend, id: number, into: SharedStateStore = store, savepoint = false): Promise<FileKeyedStateSnapshot> {
    const pending = b.snapshot(id, savepoint);
    if (!isPendingKeyedSnapshot(pending)) throw new Error('expected a pending snapshot');
    const handle = await pending.complete(into);
    b.notifyCheckpointComplete?.(id);
    return handle;
  }

  async function fileInfo(ref: SharedStateFileRef, from: TempSharedStore = store): Promise<{ kind: StateFileKind; rows: number; tombstones: number }> {
    const reader = await StateFileReader.open(join(from.root, ref.path));
    let rows = 0;
    let tombstones = 0;
    try {
      for (let block = await reader.next(); block !== undefined; block = await reader.next()) {
        rows += block.count;
        tombstones += block.values.filter((v) => v === undefined).length;
      }
      return { kind: reader.header.kind, rows, tombstones };
    } finally {
      await reader.close();
    }
  }

  /** Batches of 100 keys, prefetched like an operator does. */
  async function write(b: KeyedStateBackend, keys: readonly string[], value: (key: string) => number | undefined): Promise<void> {
    const v = b.getValueState(valueState<number>('v'));
    for (let i = 0; i < keys.length; i += 100) {
      const batch = keys.slice(i, i + 100);
      await b.prefetch?.(batch);
      for (const key of batch) {
        b.setCurrentKey(key);
        const x = value(key);
        if (x === undefined) v.clear();
        else v.update(x);
      }
    }
  }

  async function expectValues(handle: FileKeyedStateSnapshot, expected: ReadonlyMap<string, number>, absent: readonly string[] = []): Promise<void> {
    const b = await open();
    await b.restore([handle], store);
    const v = b.getValueState(valueState<number>('v'));
    expect(b.entryCount()).toBe(expected.size);
    for (const [key, x] of expected) {
      b.setCurrentKey(key);
      expect(v.value()).toBe(x);
    }
    for (const key of absent) {
      b.setCurrentKey(key);
      expect(v.value()).toBeUndefined();
    }
  }

  const keys = Array.from({ length: 1000 }, (_, i) => `key-${i}`);

  it('writes a segment with only the keys changed since the previous checkpoint, and none when nothing changed', async () => {
    const b = await open();
    await write(b, keys, (k) => keys.indexOf(k));
    const first = await checkpoint(b, 1);
    expect(first.files).toHaveLength(1);
    expect(await fileInfo(first.files[0]!)).toEqual({ kind: 'changes', rows: 1000, tombstones: 0 });

    const changed = keys.slice(0, 10);
    await write(b, changed, () => -1);
    await write(b, keys.slice(10, 13), () => undefined);
    const second = await checkpoint(b, 2);
    expect(second.files.slice(0, 1)).toEqual(first.files);
    expect(second.files).toHaveLength(2);
    expect(await fileInfo(second.files[1]!)).toEqual({ kind: 'changes', rows: 13, tombstones: 3 });
    expect(second.files[1]!.bytes * 20).toBeLessThan(first.files[0]!.bytes);

    const third = await checkpoint(b, 3);
    expect(third.files).toEqual(second.files);

    const expected = new Map(keys.map((k, i) => [k, i] as const));
    for (const k of changed) expected.set(k, -1);
    for (const k of keys.slice(10, 13)) expected.delete(k);
    await expectValues(third, expected, keys.slice(10, 13));
    await expectValues(first, new Map(keys.map((k, i) => [k, i] as const)));
  });

  it('materialises in the background once the policy says so, and a later checkpoint lists it first', async () => {
    const b = await open({ materialization: { maxSegments: 3 } });
    const expected = new Map<string, number>();
    // The first file (from empty state) is the base; the three segments after it make the policy materialise.
    for (let id = 1; id <= 4; id++) {
      const some = keys.slice(id * 100, id * 100 + 200);
      await write(b, some, () => id);
      for (const k of some) expected.set(k, id);
      const handle = await checkpoint(b, id);
      expect(handle.files).toHaveLength(id);
    }
    await b.whenIdle();
    expect(b.metrics().fullFiles).toBe(1);
    await write(b, ['key-0'], () => 42);
    expected.set('key-0', 42);
    const fifth = await checkpoint(b, 5);
    expect(fifth.files).toHaveLength(2);
    expect(await fileInfo(fifth.files[0]!)).toEqual({ kind: 'full', rows: 500, tombstones: 0 });
    expect(await fileInfo(fifth.files[1]!)).toEqual({ kind: 'changes', rows: 1, tombstones: 0 });
    await expectValues(fifth, expected);
  });

  it('materialises when the changelog outgrows its ratio of the materialised size', async () => {
    const b = await open({ materialization: { changelogRatio: 0.5, minChangelogBytes: 0, maxSegments: 1000 } });
    await write(b, keys, () => 1);
    const first = await checkpoint(b, 1);
    await b.whenIdle();
    // The first segment on empty state holds the whole state: it serves as the materialisation, none is written.
    expect(b.metrics().fullFiles).toBe(0);
    const second = await checkpoint(b, 2);
    expect(second.files).toEqual(first.files);
    await write(b, keys.slice(0, 100), () => 2);
    await checkpoint(b, 3);
    await b.whenIdle();
    expect(b.metrics().fullFiles).toBe(0);
    await write(b, keys.slice(0, 600), () => 3);
    await checkpoint(b, 4);
    await b.whenIdle();
    expect(b.metrics().fullFiles).toBe(1);
    const fifth = await checkpoint(b, 5);
    expect(fifth.files).toHaveLength(1);
    expect((await fileInfo(fifth.files[0]!)).kind).toBe('full');
  });

  it('a savepoint is one self-contained full file, and the next checkpoint still carries the changes before it', async () => {
    const b = await open();
    await write(b, keys.slice(0, 100), () => 1);
    await checkpoint(b, 1);
    await write(b, keys.slice(0, 10), () => 2);
    const savepointStore = await TempSharedStore.create();
    try {
      const savepoint = await checkpoint(b, 2, savepointStore, true);
      expect(savepoint.files).toHaveLength(1);
      expect(await fileInfo(savepoint.files[0]!, savepointStore)).toEqual({ kind: 'full', rows: 100, tombstones: 0 });
      const third = await checkpoint(b, 3);
      expect(third.files).toHaveLength(2);
      expect((await fileInfo(third.files[1]!)).rows).toBe(10);
      const restored = await open();
      await restored.restore([savepoint], savepointStore);
      restored.setCurrentKey('key-0');
      expect(restored.getValueState(valueState<number>('v')).value()).toBe(2);
    } finally {
      await savepointStore.dispose();
    }
  });

  it('writes everything when the checkpoint store is not the one the restored files are in', async () => {
    const b = await open();
    await write(b, keys.slice(0, 100), () => 1);
    const first = await checkpoint(b, 1);
    const restored = await open();
    await restored.restore([first], store);
    await write(restored, ['key-0'], () => 2);
    const other = await TempSharedStore.create();
    try {
      const handle = await checkpoint(restored, 2, other);
      expect(handle.files).toHaveLength(1);
      expect(await fileInfo(handle.files[0]!, other)).toEqual({ kind: 'full', rows: 100, tombstones: 0 });
      // The same store continues the chain with a segment.
      const again = await open();
      await again.restore([first], store);
      await write(again, ['key-0'], () => 3);
      const continued = await checkpoint(again, 2);
      expect(continued.files).toHaveLength(2);
      expect(continued.files[0]).toEqual(first.files[0]);
    } finally {
      await other.dispose();
    }
  });

  it('a checkpoint whose files failed to upload leaves its changes to the next one', async () => {
    const b = await open();
    await write(b, keys.slice(0, 100), () => 1);
    await checkpoint(b, 1);
    await write(b, keys.slice(0, 5), () => 2);
    const failing: SharedStateStore = {
      location: store.location,
      put: () => Promise.reject(new Error('disk full')),
      get: (ref, path) => store.get(ref, path),
    };
    const pending = b.snapshot(2);
    if (!isPendingKeyedSnapshot(pending)) throw new Error('expected a pending snapshot');
    await expect(pending.complete(failing)).rejects.toThrow('disk full');
    await write(b, keys.slice(5, 7), () => 3);
    const third = await checkpoint(b, 3);
    expect(third.files).toHaveLength(2);
    expect((await fileInfo(third.files[1]!)).rows).toBe(7);
    const expected = new Map<string, number>(keys.slice(0, 100).map((k) => [k, 1]));
    for (const k of keys.slice(0, 5)) expected.set(k, 2);
    for (const k of keys.slice(5, 7)) expected.set(k, 3);
    await expectValues(third, expected);
  });

  it('promotes the generations of completed checkpoints into the main area without changing what reads see', async () => {
    const b = await open({ cacheMaxKeys: 10 });
    await write(b, keys, (k) => keys.indexOf(k));
    await checkpoint(b, 1);
    await b.whenIdle();
    expect(b.metrics().promotedGenerations).toBeGreaterThan(0);
    await write(b, keys.slice(0, 500), () => -7);
    const v = b.getValueState(valueState<number>('v'));
    for (const [i, key] of keys.entries()) {
      if (i % 97 !== 0) continue;
      b.setCurrentKey(key);
      expect(v.value()).toBe(i < 500 ? -7 : i);
    }
  });

  it('keeps the synchronous phase cheap: rows changed or evicted before the asynchronous phase are written as they were', async () => {
    const b = await open({ cacheMaxKeys: 4 });
    const v = b.getValueState(valueState<number>('v'));
    const l = b.getListState(listState<number>('l'));
    const some = keys.slice(0, 4);
    await b.prefetch(some);
    for (const [i, key] of some.entries()) {
      b.setCurrentKey(key);
      v.update(i);
      l.add(i);
    }
    const pending = b.snapshot(1);
    if (!isPendingKeyedSnapshot(pending)) throw new Error('expected a pending snapshot');
    // Changed in place after the synchronous phase (list push) and overwritten.
    b.setCurrentKey('key-0');
    l.add(100);
    v.update(100);
    // Evicted before the checkpoint wrote them: the eviction writes the sealed form.
    await b.prefetch(keys.slice(10, 20));
    for (const key of keys.slice(10, 20)) {
      b.setCurrentKey(key);
      v.update(7);
    }
    expect(b.metrics().evictedKeys).toBeGreaterThan(0);
    const handle = await pending.complete(store);
    const restored = await open();
    await restored.restore([handle], store);
    const rv = restored.getValueState(valueState<number>('v'));
    const rl = restored.getListState(listState<number>('l'));
    for (const [i, key] of some.entries()) {
      restored.setCurrentKey(key);
      expect([rv.value(), rl.get()]).toEqual([i, [i]]);
    }
    expect(restored.entryCount()).toBe(8);
    b.setCurrentKey('key-0');
    expect([v.value(), l.get()]).toEqual([100, [0, 100]]);
  });

  it('leaves expired TTL entries out of its files', async () => {
    const b = await open();
    const l = b.getListState(listState<string>('l', { ttlMs: 100 }));
    b.setCurrentKey('a');
    l.add('old');
    time = 50;
    b.setCurrentKey('b');
    l.add('b');
    time = 120;
    b.setCurrentKey('a');
    // "a" was not read since it expired: still stored, but a tombstone in the checkpoint.
    const handle = await checkpoint(b, 1);
    expect(await fileInfo(handle.files[0]!)).toEqual({ kind: 'changes', rows: 2, tombstones: 1 });
    const restored = await open();
    await restored.restore([handle], store);
    expect(restored.entryCount()).toBe(1);
  });
});
