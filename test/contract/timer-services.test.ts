import { rmSync } from 'node:fs';
import { afterAll } from 'vitest';
import { HeapTimerService } from '../../lib/state/timers/heap-timer-service.ts';
import { MemoryKeyedStateBackend } from '../../lib/state/memory/memory-backend.ts';
import { RocksDbKeyedStateBackend } from '../../lib/state/rocksdb/index.ts';
import { fastTempDir } from '../unit/state/rocksdb-test-env.ts';
import { runTimerServiceContract, type TimerPairFactory } from './timer-service.contract.ts';

const stateDir = fastTempDir('sluice-timer-contract-');
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const memory: TimerPairFactory = (keyGroupRange, maxParallelism) => ({
  backend: new MemoryKeyedStateBackend({ keyGroupRange, maxParallelism, now: () => 0 }),
  timers: new HeapTimerService({ maxParallelism }),
});

const rocksdb =
  (cacheMaxKeys?: number): TimerPairFactory =>
  (keyGroupRange, maxParallelism) => {
    const backend = new RocksDbKeyedStateBackend({
      keyGroupRange,
      maxParallelism,
      now: () => 0,
      rocksdb: { stateDir, ...(cacheMaxKeys === undefined ? {} : { cacheMaxKeys }) },
    });
    return { backend, timers: backend.timerService() };
  };

runTimerServiceContract('HeapTimerService with the memory backend', memory, { peers: { rocksdb: rocksdb(4) } });
runTimerServiceContract('RocksDbTimerService', rocksdb(), { peers: { memory } });
// Two cached keys: every timer round reads its rows back from RocksDB and evicts others.
runTimerServiceContract('RocksDbTimerService with a 2-key cache', rocksdb(2), { peers: { memory } });
