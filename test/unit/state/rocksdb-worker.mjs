// Worker-thread body for rocksdb-worker-threads.test.ts: one RocksDB backend per thread.
import { register } from 'tsx/esm/api';
import { parentPort, workerData } from 'node:worker_threads';

register();
const { rocksBackend } = await import('./rocksdb-test-env.ts');
const { valueState, isPendingKeyedSnapshot } = await import('../../../lib/state/index.ts');
const { TempSharedStore } = await import('../../contract/temp-shared-store.ts');

const { stateDir, storeRoot, subtask, keys } = workerData;
const b = rocksBackend({ stateDir, scope: { operatorId: 'threaded', subtask }, options: { cacheMaxKeys: 100 } });
await b.whenIdle();
const v = b.getValueState(valueState('v'));
for (let i = 0; i < keys; i += 500) {
  const batch = Array.from({ length: 500 }, (_, j) => `t${subtask}-${i + j}`);
  await b.prefetch(batch);
  for (const [j, key] of batch.entries()) {
    b.setCurrentKey(key);
    v.update((v.value() ?? 0) + i + j);
  }
}
const pending = b.snapshot(1);
const handle = isPendingKeyedSnapshot(pending) ? await pending.complete(TempSharedStore.at(storeRoot)) : pending;
let sum = 0;
for (let i = 0; i < keys; i += 500) {
  const batch = Array.from({ length: 500 }, (_, j) => `t${subtask}-${i + j}`);
  await b.prefetch(batch);
  for (const key of batch) {
    b.setCurrentKey(key);
    sum += v.value();
  }
}
const metrics = b.metrics();
const entries = b.entryCount();
await b.dispose();
parentPort.postMessage({ sum, entries, evicted: metrics.evictedKeys, files: handle.files.length });
