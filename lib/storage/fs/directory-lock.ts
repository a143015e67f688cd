import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import { errorCode } from './verified-files.ts';
import { PRIVATE_FILE_MODE, mkdirPrivate } from './durable-fs.ts';

/** The lock file a running job keeps in each folder it owns (its checkpoint folder, its state folder). */
export const LOCK_FILE_NAME = 'sluice.lock';

/** Who holds a lock, as its lock file records it. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** Epoch ms at which the lock was taken. */
  readonly since: number;
  /** The holder process's start time as the kernel counts it (Linux), so a reused pid is not mistaken for it. */
  readonly processStart: string | undefined;
  /** Unique per acquisition: a release removes the file only while it is still this lock's. */
  readonly token: string;
}

/** The folder is owned by another running job (or, across hosts, possibly running): the job must not start. */
export class DirectoryInUseError extends ConfigError {
  constructor(
    message: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(message);
  }
}

/** Lock files held by this process: a second job in the same process is refused as one in another process is. */
const heldHere = new Set<string>();
/** Tokens of the locks this process took, by file, for the release at exit. */
const tokens = new Map<string, string>();

// `sluice run` exits at once on SIGINT/SIGTERM (process.exit): remove the locks then, so that they do not linger
// (a lingering lock would not block the next run, whose check finds the process gone, but it misleads a reader).
process.once('exit', () => {
  for (const [file, token] of tokens) {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as { token?: string }).token === token) unlinkSync(file);
    } catch {
      // Gone or unreadable: nothing of ours to remove.
    }
  }
});
/** How often a stale lock is taken over before giving up (another job keeps winning the race for it). */
const ATTEMPTS = 5;

/**
 * Exclusive ownership of a folder by one running job, across processes on a host: a lock file created atomically
 * (written whole, then hard-linked into place, which fails if the name exists) recording pid, host, start time and
 * the process's kernel start time. Node has no flock; instead, a lock whose process is gone (same host, pid not
 * running or running a different process) is stale and taken over, so a job killed with SIGKILL never blocks the
 * rerun. A lock from another host cannot be checked and is refused, with how to remove it.
 */
export class DirectoryLock {
  private released = false;

  private constructor(
    readonly file: string,
    readonly holder: LockHolder,
  ) {}

  /**
   * Takes the lock of `dir` (created when missing), or throws DirectoryInUseError naming the holder. `what` names
   * the folder in messages (`the checkpoint directory ./checkpoints`); `advice` says what the user can do.
   */
  static async acquire(dir: string, what: string, advice: string): Promise<DirectoryLock> {
    const folder = resolve(dir);
    try {
      // Often the first to create the folder: it must be as private as the checkpoint files it will hold.
      await mkdirPrivate(folder);
    } catch (cause) {
      throw new ConfigError(`cannot use ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    const file = join(folder, LOCK_FILE_NAME);
    const refuse = (holder: LockHolder | undefined, why: string): DirectoryInUseError =>
      new DirectoryInUseError(`${what} is in use by another job: ${why} (lock file ${file}). ${advice}`, holder);
    if (heldHere.has(file)) throw refuse(undefined, `a job in this process (pid ${process.pid}) holds it`);
    const mine = newLockHolder();
    // Claimed before the file exists, so a second job of this process starting meanwhile is refused above.
    heldHere.add(file);
    try {
      return await DirectoryLock.take(file, mine, refuse);
    } catch (err) {
      heldHere.delete(file);
      throw err;
    }
  }

  private static async take(file: string, mine: LockHolder, refuse: (holder: LockHolder | undefined, why: string) => Error): Promise<DirectoryLock> {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      if (await createExclusively(file, mine)) {
        tokens.set(file, mine.token);
        return new DirectoryLock(file, mine);
      }
      const holder = await readHolder(file);
      if (holder === 'missing') continue;
      if (holder !== 'unreadable') {
        // The same folder under another path (a symlink) holds a lock of this process: that is a job of this process.
        if ([...tokens.values()].includes(holder.token)) throw refuse(holder, `a job in this process (pid ${process.pid}) holds it`);
        const state = holderState(holder);
        if (state === 'running') throw refuse(holder, describeHolder(holder));
        if (state === 'elsewhere') {
          throw refuse(holder, `${describeHolder(holder)}; it cannot be checked from ${mine.host}: if no job runs there any more, remove the lock file`);
        }
      }
      // Stale: its process is gone (killed, crashed) or the file is not a lock any job wrote whole.
      await takeOver(file, holder === 'unreadable' ? undefined : holder.token);
    }
    throw refuse(undefined, `its lock changed hands ${ATTEMPTS} times while this job tried to take it`);
  }

  /** Removes the lock file if it is still this lock's. Idempotent; errors are ignored (a stale lock is taken over). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    heldHere.delete(this.file);
    tokens.delete(this.file);
    const current = await readHolder(this.file).catch(() => 'unreadable' as const);
    if (typeof current === 'object' && current.token === this.holder.token) await unlink(this.file).catch(() => undefined);
  }
}

/** This process as a new lock's holder. */
export function newLockHolder(): LockHolder {
  return { pid: process.pid, host: hostname(), since: Date.now(), processStart: processStartTime(process.pid), token: randomBytes(8).toString('hex') };
}

export function describeHolder(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} since ${new Date(holder.since).toISOString()}`;
}

/** Writes the lock whole under a private name, then links it into place: others see all of it or nothing. */
async function createExclusively(file: string, holder: LockHolder): Promise<boolean> {
  const temp = `${file}.${holder.pid}-${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, `${JSON.stringify(holder)}\n`, { mode: PRIVATE_FILE_MODE });
  try {
    await link(temp, file);
    return true;
  } catch (cause) {
    if (errorCode(cause) === 'EEXIST') return false;
    throw new ConfigError(`cannot create the lock file ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function readHolder(file: string): Promise<LockHolder | 'missing' | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return 'missing';
    throw new ConfigError(`cannot read the lock file ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string' || typeof value.since !== 'number' || typeof value.token !== 'string') {
      return 'unreadable';
    }
    return { pid: value.pid, host: value.host, since: value.since, processStart: value.processStart ?? undefined, token: value.token };
  } catch {
    return 'unreadable';
  }
}

/**
 * `running`: its process runs on this host; `gone`: it does not; `elsewhere`: another host's, not checkable.
 * A holder with this process's pid is `gone` unless this process holds the lock (the caller checks that first).
 */
export function holderState(holder: LockHolder): 'running' | 'gone' | 'elsewhere' {
  if (holder.host !== hostname()) return 'elsewhere';
  if (holder.pid === process.pid) {
    // This process holds no such lock (heldHere): the file is from an earlier process that had the same pid.
    return 'gone';
  }
  if (!pidRunning(holder.pid)) return 'gone';
  const start = processStartTime(holder.pid);
  // A running process that started at another time is a new process with a reused pid.
  if (start !== undefined && holder.processStart !== undefined && start !== holder.processStart) return 'gone';
  return 'running';
}

function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (cause) {
    return errorCode(cause) === 'EPERM';
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined where there is no /proc. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Removes a stale lock file, unless another job replaced it meanwhile. A guard file (created exclusively) lets
 * only one of several starting jobs do this at a time, so none removes a lock another has just taken.
 */
async function takeOver(file: string, staleToken: string | undefined): Promise<void> {
  const guard = `${file}.takeover`;
  const me = newLockHolder();
  if (!(await createExclusively(guard, me))) {
    const other = await readHolder(guard);
    // A guard whose process is gone (killed during a takeover) is removed; a live one finishes its takeover.
    if (other === 'unreadable' || (other !== 'missing' && holderState(other) === 'gone')) await unlink(guard).catch(() => undefined);
    else await new Promise((r) => setTimeout(r, 20));
    return;
  }
  try {
    const current = await readHolder(file);
    const unchanged = current === 'unreadable' ? staleToken === undefined : current !== 'missing' && current.token === staleToken;
    if (unchanged) await unlink(file).catch(() => undefined);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}
