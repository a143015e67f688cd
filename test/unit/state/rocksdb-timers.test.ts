import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Timer } from '../../../lib/state/timers/timer-service.ts';
import { isPendingKeyedSnapshot, type FileKeyedStateSnapshot } from '../../../lib/state/index.ts';
import type { RocksDbKeyedStateBackend, RocksDbStateOptions } from '../../../lib/state/rocksdb/index.ts';
import { CLEANUP_AFTER_SCANNED, type RocksDbTimerService } from '../../../lib/state/rocksdb/rocksdb-timer-service.ts';
import { TIMER_INDEX_PREFIX } from '../../../lib/state/rocksdb/timer-index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, removeDir, rocksBackend } from './rocksdb-test-env.ts';

const scope = { job: 'job', operatorId: 'timers-1', subtask: 0 };
const keys = Array.from({ length: 400 }, (_, i) => `key-${i}`);

function popAll(timers: RocksDbTimerService, limit: number): Timer[] {
  const out: Timer[] = [];
  for (let round = timers.popEventTimeTimers(limit); round.length > 0; round = timers.popEventTimeTimers(limit)) out.push(...round);
  return out;
}

const ids = (timers: readonly Timer[]): string[] => timers.map((t) => `${t.timestamp}|${String(t.key)}|${String(t.namespace)}`).sort();

/** Entries of the timer index (stale ones included). */
function indexSize(b: RocksDbKeyedStateBackend): number {
  const sdb = b.openDb();
  if (sdb === undefined) throw new Error('not open');
  const cursor = sdb.db.cursor(Buffer.from([TIMER_INDEX_PREFIX]), Buffer.from([TIMER_INDEX_PREFIX + 1]));
  let n = 0;
  for (let rows = cursor.next(1000); rows.length > 0; rows = cursor.next(1000)) n += rows.length / 2;
  cursor.close();
  return n;
}

describe('RocksDB timers', () => {
  let stateDir: string | undefined;
  let store: TempSharedStore;
  const created: RocksDbKeyedStateBackend[] = [];

  beforeAll(async () => {
    store = await TempSharedStore.create();
  });
  afterEach(async () => {
    await Promise.all(created.splice(0).map((b) => b.dispose()));
    if (stateDir !== undefined) removeDir(stateDir);
    stateDir = undefined;
  });
  afterAll(async () => {
    await store.dispose();
  });

  async function open(options: RocksDbStateOptions = {}): Promise<RocksDbKeyedStateBackend> {
    stateDir ??= fastTempDir('sluice-rocks-timers-');
    const b = rocksBackend({ stateDir, scope, options: { cacheMaxKeys: 25, ...options } });
    created.push(b);
    await b.open();
    return b;
  }

  async function checkpoint(b: RocksDbKeyedStateBackend, id: number): Promise<FileKeyedStateSnapshot> {
    const pending = b.snapshot(id);
    if (!isPendingKeyedSnapshot(pending)) throw new Error('expected a pending snapshot');
    const handle = await pending.complete(store);
    b.notifyCheckpointComplete(id);
    await b.whenIdle();
    return handle;
  }

  it('local recovery restores exactly the timers of the checkpoint: fired, deleted and added ones after it do not count', async () => {
    const b = await open();
    const timers = b.timerService();
    keys.forEach((key, i) => timers.registerEventTimeTimer(key, 'w', i));
    popAll(timers, 99); // 100 fire before the checkpoint
    timers.registerEventTimeTimer('key-5', 'extra', 500); // indexed only by the checkpoint's synchronous phase
    const handle = await checkpoint(b, 7);
    const atCheckpoint = [
      ...keys.slice(100).map((key, i) => ({ key, namespace: 'w', timestamp: i + 100 })),
      { key: 'key-5', namespace: 'extra', timestamp: 500 },
    ];
    // After the checkpoint: fire more, delete one, add some (far below and above), then "crash" (dispose keeps the DB).
    popAll(timers, 199);
    timers.deleteEventTimeTimer('key-300', 'w', 300);
    timers.registerEventTimeTimer('key-1', 'late', 5);
    timers.registerEventTimeTimer('key-2', 'w', 10_000);
    b.snapshot(8); // sealed but never completed
    await b.dispose();

    const again = await open();
    await again.restore([handle], store);
    expect(again.metrics().localRecoveries).toBe(1);
    const restored = again.timerService();
    expect(restored.eventTimerCount()).toBe(atCheckpoint.length);
    expect(restored.nextEventTime()).toBe(100);
    expect(ids(popAll(restored, Number.POSITIVE_INFINITY))).toEqual(ids(atCheckpoint));
    expect(restored.eventTimerCount()).toBe(0);
  });

  it('local recovery finds timers registered just before the checkpoint (indexed by its synchronous phase)', async () => {
    const b = await open();
    const timers = b.timerService();
    keys.forEach((key, i) => timers.registerEventTimeTimer(key, '', i));
    const handle = await checkpoint(b, 3);
    await b.dispose();
    const again = await open();
    await again.restore([handle], store);
    expect(again.metrics().localRecoveries).toBe(1);
    expect(popAll(again.timerService(), Number.POSITIVE_INFINITY)).toHaveLength(keys.length);
  });

  it('deletes index entries scanned before a completed checkpoint, and keeps those a restore may still need', async () => {
    const b = await open();
    const timers = b.timerService();
    keys.forEach((key, i) => timers.registerEventTimeTimer(key, '', i));
    await checkpoint(b, 1);
    expect(indexSize(b)).toBe(keys.length);
    popAll(timers, 299);
    // Not yet: the last completed checkpoint was taken before these fired.
    expect(indexSize(b)).toBe(keys.length);
    await checkpoint(b, 2);
    expect(indexSize(b)).toBe(100);
    expect(popAll(timers, Number.POSITIVE_INFINITY)).toHaveLength(100);
  });

  it('without checkpoints, deletes scanned index entries as pops go (a job without checkpoints does not keep them)', async () => {
    const b = await open();
    const timers = b.timerService();
    const count = 2 * CLEANUP_AFTER_SCANNED + 100;
    for (let i = 0; i < count; i++) timers.registerEventTimeTimer(`t-${i}`, '', i);
    expect(popAll(timers, count - 101)).toHaveLength(count - 100);
    expect(indexSize(b)).toBeLessThan(CLEANUP_AFTER_SCANNED + 100);
    expect(popAll(timers, Number.POSITIVE_INFINITY)).toHaveLength(100);
  });

  it('restores timers from files into a fresh database (rebuilding the index) with a cache smaller than the timers', async () => {
    const b = await open();
    const timers = b.timerService();
    keys.forEach((key, i) => {
      timers.registerEventTimeTimer(key, 'a', 1000 + i);
      timers.registerEventTimeTimer(key, 'b', 1000 + i); // two namespaces per key
      timers.registerProcessingTimeTimer(key, '', i);
    });
    const full = await checkpoint(b, 1);
    popAll(timers, 1099);
    timers.deleteProcessingTimeTimer('key-0', '', 0);
    const incremental = await checkpoint(b, 2);
    expect(incremental.files.length).toBeGreaterThan(full.files.length);

    const other = rocksBackend({ stateDir: stateDir as string, scope: { ...scope, subtask: 1 }, options: { cacheMaxKeys: 10 } });
    created.push(other);
    await other.restore([incremental], store);
    expect(other.metrics().localRecoveries).toBe(0);
    const restored = other.timerService();
    expect(restored.eventTimerCount()).toBe(2 * (keys.length - 100));
    expect(restored.processingTimerCount()).toBe(keys.length - 1);
    const fired = popAll(restored, Number.POSITIVE_INFINITY);
    expect(fired).toHaveLength(2 * (keys.length - 100));
    expect(fired[0]?.timestamp).toBe(1100);
    let processing = 0;
    for (let r = restored.popProcessingTimeTimers(1e9); r.length > 0; r = restored.popProcessingTimeTimers(1e9)) processing += r.length;
    expect(processing).toBe(keys.length - 1);
  });
});
