import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { fastTempDir, removeDir } from './rocksdb-test-env.ts';

interface WorkerResult {
  sum: number;
  entries: number;
  evicted: number;
  files: number;
}

describe('RocksDB backend on worker threads', () => {
  let stateDir: string;
  let store: TempSharedStore;

  beforeAll(async () => {
    stateDir = fastTempDir('sluice-rocks-threads-');
    store = await TempSharedStore.create();
  });

  afterAll(async () => {
    removeDir(stateDir);
    await store.dispose();
  });

  it('loads the binding and runs one database per thread, two threads at once', async () => {
    const keys = 5000;
    const run = (subtask: number): Promise<WorkerResult> =>
      new Promise((resolve, reject) => {
        const worker = new Worker(fileURLToPath(new URL('./rocksdb-worker.mjs', import.meta.url)), {
          workerData: { stateDir, storeRoot: store.root, subtask, keys },
        });
        worker.once('message', (result: WorkerResult) => resolve(result));
        worker.once('error', reject);
        worker.once('exit', (code) => {
          if (code !== 0) reject(new Error(`worker ${subtask} exited with ${code}`));
        });
      });
    const results = await Promise.all([run(0), run(1)]);
    for (const result of results) {
      expect(result.entries).toBe(keys);
      expect(result.sum).toBe((keys * (keys - 1)) / 2);
      expect(result.evicted).toBeGreaterThan(keys - 200);
      expect(result.files).toBe(1);
    }
  });
});
