import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { keyGroupOf } from '../../lib/core/index.ts';
import { MemoryKeyedStateBackend } from '../../lib/state/memory/memory-backend.ts';
import { listState, mapState, valueState } from '../../lib/state/index.ts';
import { RocksDbKeyedStateBackend } from '../../lib/state/rocksdb/index.ts';
import { fastTempDir } from '../unit/state/rocksdb-test-env.ts';
import { runStateBackendContract } from './state-backend.contract.ts';

const stateDir = fastTempDir('sluice-memory-contract-');
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

runStateBackendContract('MemoryKeyedStateBackend', (opts) => new MemoryKeyedStateBackend(opts), {
  peers: { rocksdb: (opts) => new RocksDbKeyedStateBackend({ ...opts, rocksdb: { stateDir, cacheMaxKeys: 4 } }) },
});

describe('MemoryKeyedStateBackend specifics', () => {
  const options = { keyGroupRange: { start: 0, end: 127 }, maxParallelism: 128, now: () => 0 };

  it('rejects a key-group range outside [0, maxParallelism)', () => {
    expect(() => new MemoryKeyedStateBackend({ ...options, keyGroupRange: { start: 0, end: 128 } })).toThrow(
      'not within',
    );
    expect(() => new MemoryKeyedStateBackend({ ...options, keyGroupRange: { start: 5, end: 4 } })).toThrow();
  });

  it('snapshots map state as [userKey, value] pairs and list state as arrays (the shared snapshot form)', () => {
    const b = new MemoryKeyedStateBackend(options);
    b.setCurrentKey('a');
    b.getMapState(mapState<string, number>('m')).put('x', 1);
    b.getListState(listState<number>('l')).add(2);
    b.getValueState(valueState<number>('v', { ttlMs: 10 })).update(3);
    const [group] = b.snapshot().keyGroups;
    expect(group?.keyGroup).toBe(keyGroupOf('a', 128));
    expect(group?.states['m']).toEqual([['a', '', [['x', 1]]]]);
    expect(group?.states['l']).toEqual([['a', '', [2]]]);
    expect(group?.states['v']).toEqual([['a', '', { v: 3, t: 0 }]]);
  });

  it('rejects restored entries whose form does not match the kind', () => {
    const b = new MemoryKeyedStateBackend(options);
    b.restore([{ maxParallelism: 128, keyGroups: [{ keyGroup: 1, states: { l: [['k', '', 'not a list']] } }] }]);
    expect(() => b.getListState(listState('l'))).toThrow('not in the snapshot form');
  });
});
