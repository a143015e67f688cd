import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyGroupRange } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, SharedStateFileRef } from '../backend.ts';
import { RocksDb, type RocksDbOpenOptions } from './binding.ts';
import type { RecoveryMarker } from './db-layout.ts';
import { LocalStateDirs } from './local-dirs.ts';
import { StateDb } from './state-db.ts';
import type { StateRegistry } from './state-registry.ts';

export interface RecoveredDb {
  readonly sdb: StateDb;
  readonly dir: string;
  readonly marker: RecoveryMarker;
}

/**
 * Looks for a database left by an earlier instance of the same operator subtask that holds exactly the state of
 * `handle`: its marker for that checkpoint names the same files, key-group range and maxParallelism. Candidates
 * that are locked (still open elsewhere) are skipped and kept; the others that do not match are returned in
 * `rejected` for deletion.
 */
export async function findRecoverableDb(
  candidates: readonly string[],
  handle: FileKeyedStateSnapshot,
  range: KeyGroupRange,
  registry: StateRegistry,
  openOptions: RocksDbOpenOptions,
): Promise<{ found: RecoveredDb | undefined; rejected: string[] }> {
  const rejected: string[] = [];
  for (const dir of candidates) {
    let db: RocksDb;
    try {
      db = await RocksDb.open(dir, openOptions);
    } catch {
      continue;
    }
    const sdb = new StateDb(db, dir);
    let marker: RecoveryMarker | undefined;
    let compatible = false;
    try {
      marker = sdb.marker(handle.checkpointId);
      compatible = marker !== undefined && matches(marker, handle, range) && idsAgree(sdb.stateNames(), registry);
    } catch {
      compatible = false;
    }
    if (compatible && marker !== undefined) return { found: { sdb, dir, marker }, rejected };
    await sdb.close().catch(() => undefined);
    rejected.push(dir);
  }
  return { found: undefined, rejected };
}

function matches(marker: RecoveryMarker, handle: FileKeyedStateSnapshot, range: KeyGroupRange): boolean {
  return (
    marker.checkpointId === handle.checkpointId &&
    marker.keyGroupStart === range.start &&
    marker.keyGroupEnd === range.end &&
    handle.keyGroupRange.start === range.start &&
    handle.keyGroupRange.end === range.end &&
    marker.maxParallelism === handle.maxParallelism &&
    sameFiles(marker.files, handle.files)
  );
}

function sameFiles(a: readonly SharedStateFileRef[] | undefined, b: readonly SharedStateFileRef[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  return a.every((f, i) => {
    const g = b[i] as SharedStateFileRef;
    return f.path === g.path && f.sha256 === g.sha256 && f.bytes === g.bytes;
  });
}

/** States registered before the restore must keep their ids in the recovered dictionary. */
function idsAgree(stored: readonly [number, string][], registry: StateRegistry): boolean {
  for (const [id, name] of stored) {
    const byId = registry.byIdOf(id);
    const byName = registry.get(name);
    if ((byId !== undefined && byId.name !== name) || (byName !== undefined && byName.id !== id)) return false;
  }
  return true;
}

/**
 * Deletes databases of earlier instances, except one still open elsewhere: RocksDB holds the LOCK file of an open
 * database (against other processes and this one), so a database that cannot be opened for that reason is in use
 * and is kept. Opening it is the check; a database opened here is closed before it is deleted.
 */
export async function removeUnlessOpen(dirs: readonly string[], openOptions: RocksDbOpenOptions): Promise<void> {
  const free: string[] = [];
  for (const dir of dirs) {
    if (!existsSync(join(dir, 'LOCK'))) {
      free.push(dir);
      continue;
    }
    let db: RocksDb;
    try {
      db = await RocksDb.open(dir, openOptions);
    } catch {
      // Locked (open elsewhere) or unreadable: keeping it is safe, and the next start looks again.
      continue;
    }
    await db.close().catch(() => undefined);
    free.push(dir);
  }
  await LocalStateDirs.remove(free);
}
