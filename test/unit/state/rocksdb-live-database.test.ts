import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isPendingKeyedSnapshot, valueState, type KeyedStateBackend } from '../../../lib/state/index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, removeDir, rocksBackend } from './rocksdb-test-env.ts';

const scope = { job: 'job', operatorId: 'window-7', subtask: 0 };
const keys = Array.from({ length: 50 }, (_, i) => `key-${i}`);

describe('RocksDB databases of earlier instances', () => {
  const created: KeyedStateBackend[] = [];
  let stateDir: string | undefined;

  afterEach(async () => {
    await Promise.all(created.splice(0).map((b) => b.dispose()));
    if (stateDir !== undefined) removeDir(stateDir);
  });

  it('are deleted once a new instance starts fresh, except one still open (another live instance of the same operator subtask)', async () => {
    stateDir = fastTempDir('sluice-rocks-live-');
    const open = async (): Promise<KeyedStateBackend> => {
      const b = rocksBackend({ stateDir: stateDir!, scope, options: { cacheMaxKeys: 5 } });
      created.push(b);
      await b.whenIdle();
      return b;
    };
    const write = async (b: KeyedStateBackend, value: number): Promise<void> => {
      const v = b.getValueState(valueState<number>('v'));
      await b.prefetch?.(keys);
      for (const key of keys) {
        b.setCurrentKey(key);
        v.update(value);
      }
    };
    const databases = (): string[] => readdirSync(join(stateDir!, 'job', 'window-7-0')).filter((n) => n.startsWith('db-'));

    const live = await open();
    await write(live, 1);
    // A second instance of the same scope while the first is open: a second job on the same state directory.
    const second = await open();
    await write(second, 2);
    await second.dispose();
    expect(databases()).toHaveLength(2);
    // The first one's database is still whole: it checkpoints and reads its values.
    const store = await TempSharedStore.create();
    try {
      const pending = live.snapshot(1);
      expect(isPendingKeyedSnapshot(pending)).toBe(true);
      if (isPendingKeyedSnapshot(pending)) await pending.complete(store);
      const v = live.getValueState(valueState<number>('v'));
      await live.prefetch?.(keys);
      live.setCurrentKey('key-3');
      expect(v.value()).toBe(1);
    } finally {
      await store.dispose();
    }
    await live.dispose();
    // Once closed, a new fresh instance deletes both earlier databases.
    const third = await open();
    await write(third, 3);
    await third.dispose();
    expect(databases()).toHaveLength(1);
  });
});
