import { readdirSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryKeyedStateBackend } from '../../lib/state/memory/memory-backend.ts';
import { RocksDbKeyedStateBackend } from '../../lib/state/rocksdb/index.ts';
import { fastTempDir } from '../unit/state/rocksdb-test-env.ts';
import { runStateBackendContract } from './state-backend.contract.ts';

const stateDir = fastTempDir('sluice-rocksdb-contract-');

afterAll(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

const memory = { memory: (opts: ConstructorParameters<typeof MemoryKeyedStateBackend>[0]) => new MemoryKeyedStateBackend(opts) };

runStateBackendContract('RocksDbKeyedStateBackend', (opts) => new RocksDbKeyedStateBackend({ ...opts, rocksdb: { stateDir } }), {
  peers: memory,
});

// A cache of two keys: nearly every access goes through eviction, RocksDB and the synchronous read fallback.
runStateBackendContract(
  'RocksDbKeyedStateBackend with a 2-key cache',
  (opts) => new RocksDbKeyedStateBackend({ ...opts, rocksdb: { stateDir, cacheMaxKeys: 2 } }),
  { peers: memory },
);

describe('RocksDB contract runs', () => {
  it('leave no database directories behind (unscoped backends delete theirs on dispose)', () => {
    expect(readdirSync(stateDir)).toEqual([]);
  });
});
