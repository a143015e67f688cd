import { ConfigError } from '../../core/index.ts';

/** When the RocksDB backend writes a full copy of its state instead of another changelog segment. */
export interface MaterializationPolicy {
  /**
   * Materialise once the changelog segments written since the last materialisation add up to more than this
   * fraction of its size (restore reads at most about 1 + ratio times the state).
   * @default 1
   */
  readonly changelogRatio?: number;
  /** ...but not while the changelog is smaller than this (small states are cheap to replay). @default 16 MiB */
  readonly minChangelogBytes?: number;
  /** Materialise at the latest when this many segments have been written since the last materialisation. @default 20 */
  readonly maxSegments?: number;
}

export interface RocksDbStateOptions {
  /**
   * Local directory of the backends' databases. Each backend instance uses `${stateDir}/${scope}` (scope: the
   * operator and subtask it serves, see RocksDbScope) and creates it when missing.
   * @default 'sluice-state' (DEFAULT_STATE_DIR, relative to the working directory, as `--state-dir`)
   */
  readonly stateDir?: string;
  /**
   * How many keys' state the write-behind cache keeps on the heap per backend. Changed keys are written to RocksDB
   * when they leave the cache and at every checkpoint. The bound is exceeded by at most one input batch between
   * evictions (prefetched keys are never evicted before the batch that asked for them).
   * @default 100_000
   */
  readonly cacheMaxKeys?: number;
  readonly materialization?: MaterializationPolicy;
  /**
   * On restore, reuse the local database when it holds exactly the checkpoint being restored (no download), and
   * keep the database when the backend is disposed so a restart can reuse it. When false, every restore
   * downloads and the directory is deleted on dispose.
   * @default true
   */
  readonly localRecovery?: boolean;
  /** RocksDB block cache per database (native memory, outside the JS heap). @default 32 MiB */
  readonly blockCacheBytes?: number;
  /** RocksDB memtable budget per database (native memory). @default 64 MiB */
  readonly writeBufferBytes?: number;
  /** ZSTD compression of RocksDB's lower levels. @default true */
  readonly compression?: boolean;
}

export interface CompiledRocksDbStateOptions {
  readonly stateDir: string;
  readonly cacheMaxKeys: number;
  readonly changelogRatio: number;
  readonly minChangelogBytes: number;
  readonly maxSegments: number;
  readonly localRecovery: boolean;
  readonly blockCacheBytes: number;
  readonly writeBufferBytes: number;
  readonly compression: boolean;
}

/** The one default state directory: of the RocksDB options, of `sluice run --state-dir`, and of the docs. */
export const DEFAULT_STATE_DIR = 'sluice-state';

export const ROCKSDB_STATE_DEFAULTS: CompiledRocksDbStateOptions = Object.freeze({
  stateDir: DEFAULT_STATE_DIR,
  cacheMaxKeys: 100_000,
  changelogRatio: 1,
  minChangelogBytes: 16 * 1024 * 1024,
  maxSegments: 20,
  localRecovery: true,
  blockCacheBytes: 32 * 1024 * 1024,
  writeBufferBytes: 64 * 1024 * 1024,
  compression: true,
});

/** Validates and fills in defaults once, when the composition root builds the services. */
export function compileRocksDbStateOptions(options: RocksDbStateOptions = {}): CompiledRocksDbStateOptions {
  const d = ROCKSDB_STATE_DEFAULTS;
  const m = options.materialization ?? {};
  const compiled: CompiledRocksDbStateOptions = {
    stateDir: options.stateDir ?? d.stateDir,
    cacheMaxKeys: options.cacheMaxKeys ?? d.cacheMaxKeys,
    changelogRatio: m.changelogRatio ?? d.changelogRatio,
    minChangelogBytes: m.minChangelogBytes ?? d.minChangelogBytes,
    maxSegments: m.maxSegments ?? d.maxSegments,
    localRecovery: options.localRecovery ?? d.localRecovery,
    blockCacheBytes: options.blockCacheBytes ?? d.blockCacheBytes,
    writeBufferBytes: options.writeBufferBytes ?? d.writeBufferBytes,
    compression: options.compression ?? d.compression,
  };
  const where = 'RocksDB state backend option';
  if (typeof compiled.stateDir !== 'string' || compiled.stateDir.length === 0) {
    throw new ConfigError(`${where} stateDir must be a non-empty directory path`);
  }
  requireInteger(`${where} cacheMaxKeys`, compiled.cacheMaxKeys, 1);
  if (typeof compiled.changelogRatio !== 'number' || !(compiled.changelogRatio > 0) || !Number.isFinite(compiled.changelogRatio)) {
    throw new ConfigError(`${where} materialization.changelogRatio must be a positive number, got ${String(compiled.changelogRatio)}`);
  }
  requireInteger(`${where} materialization.minChangelogBytes`, compiled.minChangelogBytes, 0);
  requireInteger(`${where} materialization.maxSegments`, compiled.maxSegments, 1);
  requireInteger(`${where} blockCacheBytes`, compiled.blockCacheBytes, 0);
  requireInteger(`${where} writeBufferBytes`, compiled.writeBufferBytes, 1024 * 1024);
  if (typeof compiled.localRecovery !== 'boolean') throw new ConfigError(`${where} localRecovery must be true or false`);
  if (typeof compiled.compression !== 'boolean') throw new ConfigError(`${where} compression must be true or false`);
  return Object.freeze(compiled);
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer of at least ${min}, got ${String(value)}`);
  }
}
