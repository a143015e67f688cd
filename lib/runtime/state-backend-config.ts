import { resolve } from 'node:path';
import { ConfigError } from '../core/index.ts';
import { DEFAULT_STATE_DIR } from '../state/rocksdb/rocksdb-options.ts';

/** Which keyed state backend a job's operators get. */
export interface StateBackendConfig {
  /** `memory`: state on the JS heap (fastest, bounded by the heap). `rocksdb`: embedded RocksDB with a write-behind
   * cache and incremental checkpoints, for state larger than memory. @default 'memory' */
  readonly kind: 'memory' | 'rocksdb';
  /** Folder for RocksDB databases (one per operator subtask); reused across runs for local recovery.
   * @default './sluice-state' */
  readonly dir?: string;
}

export { DEFAULT_STATE_DIR };

/** Checks a state backend choice once at start-up; returns it with `dir` made absolute. */
export function compileStateBackendConfig(config: StateBackendConfig | undefined): Required<StateBackendConfig> {
  const kind = config?.kind ?? 'memory';
  if (kind !== 'memory' && kind !== 'rocksdb') {
    throw new ConfigError(`unknown state backend "${String(kind)}": use "memory" or "rocksdb" (--state-backend)`);
  }
  const dir = config?.dir ?? DEFAULT_STATE_DIR;
  if (dir === '') throw new ConfigError('the state directory must not be empty; pass --state-dir DIR');
  return { kind, dir: resolve(dir) };
}
