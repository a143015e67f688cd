import { describe, expect, it } from 'vitest';
import type { ClusterConfigItem } from '../../../../lib/cluster/control-items.ts';
import { configDifferences } from '../../../../lib/connectors/aws/cluster/job-admin-table.ts';

const base: ClusterConfigItem = {
  fingerprint: 'f',
  parallelism: 2,
  maxParallelism: 128,
  edges: [],
  checkpointDir: 's3://b/p',
  checkpointing: { intervalMs: 1, timeoutMs: 2 },
  tasks: [],
  sourceTasks: [],
  sinks: [],
  createdAt: 1,
};

describe('configDifferences', () => {
  it('ignores createdAt and the order of map keys', () => {
    expect(configDifferences(base, { ...base, createdAt: 99, checkpointing: { timeoutMs: 2, intervalMs: 1 } })).toEqual([]);
  });

  it('names each differing setting, including one present on one side only', () => {
    expect(configDifferences(base, { ...base, fingerprint: 'g', parallelism: 3, restoreFrom: 's3://b/sp' })).toEqual([
      'plan fingerprint: stored "f", now "g"',
      'parallelism (P): stored 2, now 3',
      'restore from: stored null, now "s3://b/sp"',
    ]);
    expect(configDifferences({ ...base, exchangeStream: 'x' }, base)).toEqual(['exchange stream: stored "x", now null']);
    expect(configDifferences(base, { ...base, checkpointing: { intervalMs: 1, timeoutMs: 3 } })).toHaveLength(1);
  });

  it('compares the lease duration, except against a config stored before it was (its workers keep their flags)', () => {
    expect(configDifferences({ ...base, leaseDurationMs: 10_000 }, { ...base, leaseDurationMs: 30_000 })).toEqual(['lease duration (ms): stored 10000, now 30000']);
    expect(configDifferences(base, { ...base, leaseDurationMs: 10_000 })).toEqual([]);
  });
});
