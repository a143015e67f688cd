import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Which operator subtask a backend serves: names its directory, so a restarted subtask finds its old database. */
export interface RocksDbScope {
  /** Separates the databases of different jobs under one state directory. */
  readonly job?: string | undefined;
  /** Stable across restarts of the same job (e.g. the logical node id or the operator's uid). */
  readonly operatorId: string;
  readonly subtask: number;
  /**
   * A folder on local disk for this backend's temp files (state files in transit), when the state directory is on
   * shared storage (EFS). @default a `tmp-<instance>` folder beside the databases
   */
  readonly tempRoot?: string | undefined;
}

const DB_DIR = /^db-(\d+)-[0-9a-f]+$/;

/** Letters, digits, '.', '_', '-': safe as a directory name and inside shared file names. */
function safeName(text: string, max: number): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[._-]+/, '').slice(0, max) || 'x';
}

/** The operator subtask part of directory and file names. */
export function scopeName(scope: RocksDbScope): string {
  return `${safeName(scope.operatorId, 60)}-${scope.subtask}`;
}

/**
 * The directories of one backend instance under `${stateDir}/${scope}`: its own database `db-<time>-<random>`
 * (new for every instance, so a fresh start never sees old state), older databases left by earlier instances of
 * the same scope (candidates for local recovery, newest first), and a temp directory for state files in transit.
 */
export class LocalStateDirs {
  readonly base: string;
  readonly temp: string;
  /** The folder holding `temp` and the temp folders of earlier instances of the same scope. */
  private readonly tempBase: string;
  /** Databases of earlier instances, newest first, found when this instance was created. */
  readonly candidates: readonly string[];
  readonly instanceId: string;

  constructor(stateDir: string, scope: RocksDbScope | undefined) {
    this.instanceId = randomBytes(6).toString('hex');
    if (scope === undefined) this.base = join(stateDir, `unscoped-${this.instanceId}`);
    else if (scope.job === undefined) this.base = join(stateDir, scopeName(scope));
    else this.base = join(stateDir, safeName(scope.job, 80), scopeName(scope));
    mkdirSync(this.base, { recursive: true });
    this.tempBase = scope?.tempRoot === undefined ? this.base : join(scope.tempRoot, scopeName(scope));
    this.temp = join(this.tempBase, `tmp-${this.instanceId}`);
    this.candidates = readdirSync(this.base)
      .map((entry) => ({ entry, time: DB_DIR.exec(entry)?.[1] }))
      .filter((e): e is { entry: string; time: string } => e.time !== undefined)
      .sort((a, b) => Number(b.time) - Number(a.time) || (a.entry < b.entry ? 1 : -1))
      .map((e) => join(this.base, e.entry));
  }

  newDatabaseDir(): string {
    return join(this.base, `db-${Date.now()}-${this.instanceId}`);
  }

  /** Deletes directories; failures are ignored (another instance may still hold one; the next start retries). */
  static async remove(dirs: readonly string[]): Promise<void> {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }).catch(() => undefined)));
  }

  /** Leftover temp directories of earlier instances. */
  staleTempDirs(): string[] {
    mkdirSync(this.tempBase, { recursive: true });
    return readdirSync(this.tempBase)
      .filter((e) => e.startsWith('tmp-') && e !== `tmp-${this.instanceId}`)
      .map((e) => join(this.tempBase, e));
  }
}
