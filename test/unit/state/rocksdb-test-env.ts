import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KeyGroupRange } from '../../../lib/core/index.ts';
import { RocksDbKeyedStateBackend, type RocksDbScope, type RocksDbStateOptions } from '../../../lib/state/rocksdb/index.ts';

/** A temp directory on tmpfs when there is one: RocksDB fsyncs on open, which costs ~100 ms on a disk. */
export function fastTempDir(prefix: string): string {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  return mkdtempSync(join(base, prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export const MAX_PARALLELISM = 128;
export const FULL_RANGE: KeyGroupRange = { start: 0, end: MAX_PARALLELISM - 1 };

export interface BackendSpec {
  readonly stateDir: string;
  readonly now?: () => number;
  readonly range?: KeyGroupRange;
  readonly scope?: RocksDbScope;
  readonly options?: RocksDbStateOptions;
}

export function rocksBackend(spec: BackendSpec): RocksDbKeyedStateBackend {
  return new RocksDbKeyedStateBackend({
    keyGroupRange: spec.range ?? FULL_RANGE,
    maxParallelism: MAX_PARALLELISM,
    now: spec.now ?? (() => 0),
    scope: spec.scope,
    rocksdb: { stateDir: spec.stateDir, ...spec.options },
  });
}
