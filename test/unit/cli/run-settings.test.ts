import { describe, it, expect } from 'vitest';
import { resolve } from 'node:path';
import { ConfigError } from '../../../lib/core/index.ts';
import { toRunSettings } from '../../../lib/cli/run-settings.ts';
import { compileStateBackendConfig } from '../../../lib/runtime/state-backend-config.ts';
import { defaultSavepointDir } from '../../../lib/runtime/restore/prepare-checkpointing.ts';
import { isRemoteLocation } from '../../../lib/runtime/restore/open-checkpoint-storage.ts';

const defaults = { restPort: 0, stateBackend: 'memory', restartAttempts: 3, restartDelayMs: 1000, restartStrategy: 'fixed-delay', restartMaxDelayMs: 60000, checkpointIntervalMs: 5000 };

describe('run settings: state backend', () => {
  it('defaults to the memory backend', () => {
    expect(toRunSettings(defaults).stateBackend).toEqual({ kind: 'memory', dir: resolve('sluice-state') });
  });

  it('takes --state-backend rocksdb with --state-dir, made absolute', () => {
    const settings = toRunSettings({ ...defaults, stateBackend: 'rocksdb', stateDir: 'tmp/state' });
    expect(settings.stateBackend).toEqual({ kind: 'rocksdb', dir: resolve('tmp/state') });
  });

  it('refuses --state-dir without --state-backend rocksdb', () => {
    expect(() => toRunSettings({ ...defaults, stateDir: 'x' })).toThrow(ConfigError);
    expect(() => toRunSettings({ ...defaults, stateDir: 'x' })).toThrow(/--state-backend rocksdb/);
  });

  it('refuses an unknown backend and an empty directory', () => {
    expect(() => compileStateBackendConfig({ kind: 'leveldb' as 'memory' })).toThrow(/memory.*rocksdb/);
    expect(() => compileStateBackendConfig({ kind: 'rocksdb', dir: '' })).toThrow(/--state-dir/);
  });
});

describe('checkpoint locations', () => {
  it('tells object store URIs from folders', () => {
    expect(isRemoteLocation('s3://bucket/prefix')).toBe(true);
    expect(isRemoteLocation('./checkpoints')).toBe(false);
    expect(isRemoteLocation('C:/checkpoints')).toBe(false);
    expect(defaultSavepointDir('s3://b/p')).toBe('s3://b/p/savepoints');
    expect(defaultSavepointDir('s3://b/p/?commitTable=t')).toBe('s3://b/p/savepoints');
    expect(defaultSavepointDir('chk')).toBe('chk/savepoints');
  });
});

describe('run settings: failing checkpoints', () => {
  it('passes --tolerable-checkpoint-failures to the checkpoint coordinator', () => {
    const settings = toRunSettings({ ...defaults, checkpointDir: 'chk', tolerableCheckpointFailures: 0 });
    expect(settings.checkpointing?.tolerableFailures).toBe(0);
  });
});

describe('default state directory', () => {
  it('is the same for sluice run and the RocksDB options', async () => {
    const { ROCKSDB_STATE_DEFAULTS } = await import('../../../lib/state/rocksdb/rocksdb-options.ts');
    expect(resolve(ROCKSDB_STATE_DEFAULTS.stateDir)).toBe(compileStateBackendConfig({ kind: 'rocksdb' }).dir);
  });
});
