import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { keyGroupRangeForSubtask, type KeyGroupRange } from '../../../lib/core/index.ts';
import {
  isPendingKeyedSnapshot,
  valueState,
  type FileKeyedStateSnapshot,
  type KeyedStateBackend,
  type SharedStateFileRef,
  type SharedStateStore,
} from '../../../lib/state/index.ts';
import type { RocksDbKeyedStateBackend, RocksDbStateOptions } from '../../../lib/state/rocksdb/index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, MAX_PARALLELISM, removeDir, rocksBackend } from './rocksdb-test-env.ts';

/** Counts the files a restore downloads. */
class CountingStore implements SharedStateStore {
  gets = 0;
  constructor(private readonly inner: TempSharedStore) {}
  get location(): string {
    return this.inner.location;
  }
  put(name: string, localPath: string): Promise<SharedStateFileRef> {
    return this.inner.put(name, localPath);
  }
  get(ref: SharedStateFileRef, localPath: string): Promise<void> {
    this.gets++;
    return this.inner.get(ref, localPath);
  }
}

const scope = { job: 'job', operatorId: 'window-3', subtask: 0 };
const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`);

describe('RocksDB local recovery', () => {
  let stateDir: string | undefined;
  let shared: TempSharedStore;
  let store: CountingStore;
  const created: KeyedStateBackend[] = [];

  beforeAll(async () => {
    shared = await TempSharedStore.create();
  });

  afterEach(async () => {
    await Promise.all(created.splice(0).map((b) => b.dispose()));
    if (stateDir !== undefined) removeDir(stateDir);
    stateDir = undefined;
  });

  afterAll(async () => {
    await shared.dispose();
  });

  async function open(options: RocksDbStateOptions = {}, range?: KeyGroupRange): Promise<RocksDbKeyedStateBackend> {
    stateDir ??= fastTempDir('sluice-rocks-local-');
    const b = rocksBackend({ stateDir, scope, range, options: { cacheMaxKeys: 20, ...options } });
    created.push(b);
    await b.whenIdle();
    return b;
  }

  async function write(b: KeyedStateBackend, some: readonly string[], value: number): Promise<void> {
    const v = b.getValueState(valueState<number>('v'));
    await b.prefetch?.(some);
    for (const key of some) {
      b.setCurrentKey(key);
      v.update(value);
    }
  }

  async function checkpoint(b: KeyedStateBackend, id: number): Promise<FileKeyedStateSnapshot> {
    const pending = b.snapshot(id);
    if (!isPendingKeyedSnapshot(pending)) throw new Error('expected a pending snapshot');
    const handle = await pending.complete(store);
    b.notifyCheckpointComplete?.(id);
    return handle;
  }

  function valuesOf(b: KeyedStateBackend, some: readonly string[]): (number | undefined)[] {
    const v = b.getValueState(valueState<number>('v'));
    return some.map((key) => {
      b.setCurrentKey(key);
      return v.value();
    });
  }

  /** A backend that wrote checkpoint 5, then kept changing state (evicting into RocksDB), then was disposed. */
  async function previousRun(): Promise<{ handle: FileKeyedStateSnapshot; older: FileKeyedStateSnapshot; dir: string }> {
    store = new CountingStore(shared);
    const b = await open();
    await write(b, keys, 1);
    const older = await checkpoint(b, 4);
    await write(b, keys.slice(0, 100), 5);
    const handle = await checkpoint(b, 5);
    for (let i = 0; i < keys.length; i += 50) await write(b, keys.slice(i, i + 50), 9);
    const dir = b.directory;
    await b.dispose();
    return { handle, older, dir };
  }

  const atCheckpoint5 = (): (number | undefined)[] => keys.map((_, i) => (i < 100 ? 5 : 1));

  it('reuses the database that holds exactly the restored checkpoint, discarding what was written after it', async () => {
    const { handle, dir } = await previousRun();
    const b = await open();
    await b.restore([handle], store);
    expect(store.gets).toBe(0);
    expect(b.metrics().localRecoveries).toBe(1);
    expect(b.directory).toBe(dir);
    expect(valuesOf(b, keys)).toEqual(atCheckpoint5());
    expect(b.entryCount()).toBe(keys.length);
    // The chain continues: the next checkpoint adds one segment to the restored files.
    await write(b, ['key-0'], 6);
    const next = await checkpoint(b, 6);
    expect(next.files.slice(0, handle.files.length)).toEqual(handle.files);
    expect(next.files).toHaveLength(handle.files.length + 1);
  });

  it('downloads when the database holds another checkpoint, and removes that database', async () => {
    const { older, dir } = await previousRun();
    const b = await open();
    await b.restore([older], store);
    expect(store.gets).toBe(older.files.length);
    expect(b.metrics().localRecoveries).toBe(0);
    expect(valuesOf(b, keys)).toEqual(keys.map(() => 1));
    // whenIdle includes the deletion of earlier instances' databases.
    await b.whenIdle();
    expect(readdirSync(join(dir, '..'))).not.toContain(dir.split('/').pop());
  });

  it('downloads when the handle names other files or another key-group range', async () => {
    const { handle } = await previousRun();
    const forged = { ...handle, files: handle.files.map((f) => ({ ...f, sha256: f.sha256.replace(/^./, (c) => (c === '0' ? '1' : '0')) })) };
    const b = await open();
    await expect(b.restore([forged], store)).rejects.toThrow();
    expect(b.metrics().localRecoveries).toBe(0);

    const second = await previousRun();
    const half = keyGroupRangeForSubtask(0, 2, MAX_PARALLELISM);
    const c = await open({}, half);
    await c.restore([second.handle], store);
    expect(c.metrics().localRecoveries).toBe(0);
    expect(store.gets).toBe(second.handle.files.length);
  });

  it('a fresh start (no restore) begins empty and removes the old databases', async () => {
    const { dir } = await previousRun();
    const b = await open();
    expect(valuesOf(b, keys.slice(0, 3))).toEqual([undefined, undefined, undefined]);
    expect(b.entryCount()).toBe(0);
    await b.whenIdle();
    expect(readdirSync(join(dir, '..'))).not.toContain(dir.split('/').pop());
  });

  it('with localRecovery off, downloads and deletes its database on dispose', async () => {
    const { handle } = await previousRun();
    const b = await open({ localRecovery: false });
    await b.restore([handle], store);
    expect(store.gets).toBe(handle.files.length);
    expect(valuesOf(b, keys)).toEqual(atCheckpoint5());
    const dir = b.directory;
    await b.dispose();
    expect(readdirSync(join(dir, '..')).filter((e) => e.startsWith('db-'))).toEqual([]);
  });

  it('reuses the database of a process that crashed after the checkpoint (no dispose, no close)', async () => {
    store = new CountingStore(shared);
    stateDir = fastTempDir('sluice-rocks-crash-');
    const out = join(stateDir, 'handle.json');
    const script = join(stateDir, 'crash.mts');
    const env = fileURLToPath(new URL('./rocksdb-test-env.ts', import.meta.url));
    const state = fileURLToPath(new URL('../../../lib/state/index.ts', import.meta.url));
    const storeModule = fileURLToPath(new URL('../../contract/temp-shared-store.ts', import.meta.url));
    writeFileSync(
      script,
      `import { writeFileSync } from 'node:fs';
import { rocksBackend } from ${JSON.stringify(env)};
import { valueState } from ${JSON.stringify(state)};
import { TempSharedStore } from ${JSON.stringify(storeModule)};
const store = TempSharedStore.at(${JSON.stringify(shared.root)});
const b = rocksBackend({ stateDir: ${JSON.stringify(stateDir)}, scope: ${JSON.stringify(scope)}, options: { cacheMaxKeys: 20 } });
await b.whenIdle();
const v = b.getValueState(valueState('v'));
const keys = ${JSON.stringify(keys)};
const write = async (some, x) => { await b.prefetch(some); for (const k of some) { b.setCurrentKey(k); v.update(x); } };
await write(keys, 1);
await write(keys.slice(0, 100), 5);
const handle = await b.snapshot(5).complete(store);
b.notifyCheckpointComplete(5);
await b.whenIdle();
writeFileSync(${JSON.stringify(out)}, JSON.stringify(handle));
for (let i = 0; i < keys.length; i += 50) await write(keys.slice(i, i + 50), 9);
b.snapshot(6);
process.kill(process.pid, 'SIGKILL');
`,
    );
    const child = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', cwd: fileURLToPath(new URL('../../..', import.meta.url)) });
    expect(child.signal, child.stderr).toBe('SIGKILL');
    const handle = JSON.parse(readFileSync(out, 'utf8')) as FileKeyedStateSnapshot;
    const b = await open();
    await b.restore([handle], store);
    expect(b.metrics().localRecoveries).toBe(1);
    expect(store.gets).toBe(0);
    expect(valuesOf(b, keys)).toEqual(atCheckpoint5());
  });
});
