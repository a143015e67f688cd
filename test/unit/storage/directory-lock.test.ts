import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryInUseError, DirectoryLock, LOCK_FILE_NAME } from '../../../lib/storage/fs/directory-lock.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-lock-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = (): string => join(root, `d${++dirs}`);

/** Field 22 of /proc/<pid>/stat, as the lock records it. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function writeLock(dir: string, holder: Record<string, unknown>): void {
  writeFileSync(join(dir, LOCK_FILE_NAME), JSON.stringify({ since: Date.now(), token: 'other', host: hostname(), ...holder }));
}

/** A child process that runs until killed. */
async function otherProcess(): Promise<{ pid: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const exited = new Promise((r) => child.once('exit', r));
  return {
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

const acquire = (dir: string): Promise<DirectoryLock> => DirectoryLock.acquire(dir, `the test folder ${dir}`, 'Use another one.');

describe('DirectoryLock', () => {
  it('creates the folder and a lock file with pid, host and time; a second job of this process is refused; release frees it', async () => {
    const dir = freshDir();
    const lock = await acquire(dir);
    const recorded = JSON.parse(readFileSync(join(dir, LOCK_FILE_NAME), 'utf8')) as { pid: number; host: string; since: number };
    expect(recorded).toMatchObject({ pid: process.pid, host: hostname() });
    await expect(acquire(dir)).rejects.toThrow(DirectoryInUseError);
    await lock.release();
    expect(existsSync(join(dir, LOCK_FILE_NAME))).toBe(false);
    await (await acquire(dir)).release();
  });

  it('refuses the same folder reached through a symlink while this process holds it', async () => {
    const dir = freshDir();
    const lock = await acquire(dir);
    const alias = join(root, `alias-${dirs}`);
    symlinkSync(dir, alias);
    await expect(acquire(alias)).rejects.toThrow(/a job in this process/);
    await lock.release();
  });

  it('of jobs starting at once in this process, exactly one gets the lock', async () => {
    const dir = freshDir();
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => acquire(dir)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'fulfilled') await o.value.release();
  });

  it('refuses a folder whose lock is held by a running process on this host, naming it', async () => {
    const dir = freshDir();
    await acquire(dir).then((l) => l.release());
    const other = await otherProcess();
    try {
      writeLock(dir, { pid: other.pid, processStart: processStart(other.pid), since: Date.UTC(2026, 0, 2, 3, 4, 5) });
      const err = await acquire(dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DirectoryInUseError);
      expect((err as Error).message).toBe(
        `the test folder ${dir} is in use by another job: pid ${other.pid} on ${hostname()} since 2026-01-02T03:04:05.000Z (lock file ${join(dir, LOCK_FILE_NAME)}). Use another one.`,
      );
      expect(JSON.parse(readFileSync(join(dir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid: other.pid });
    } finally {
      await other.stop();
    }
  });

  it('takes over the lock of a process that is gone (killed with SIGKILL), or of a reused pid', async () => {
    const dir = freshDir();
    await acquire(dir).then((l) => l.release());
    const other = await otherProcess();
    writeLock(dir, { pid: other.pid, processStart: processStart(other.pid) });
    await other.stop();
    const lock = await acquire(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();

    const alive = await otherProcess();
    try {
      // A running process with that pid, but started at another time: not the holder.
      writeLock(dir, { pid: alive.pid, processStart: '1' });
      if (processStart(alive.pid) !== undefined) await (await acquire(dir)).release();
    } finally {
      await alive.stop();
    }
  });

  it('takes over a lock file that no job wrote whole, and refuses one from another host with how to remove it', async () => {
    const dir = freshDir();
    await acquire(dir).then((l) => l.release());
    writeFileSync(join(dir, LOCK_FILE_NAME), '');
    await (await acquire(dir)).release();
    writeLock(dir, { pid: 1, host: 'elsewhere.example' });
    await expect(acquire(dir)).rejects.toThrow(/pid 1 on elsewhere\.example since .*it cannot be checked from .*remove the lock file/);
  });

  it('release leaves a lock that is no longer its own', async () => {
    const dir = freshDir();
    const lock = await acquire(dir);
    writeLock(dir, { pid: 1, token: 'someone else' });
    await lock.release();
    expect(existsSync(join(dir, LOCK_FILE_NAME))).toBe(true);
  });

  it('refuses a folder path that is a file, with the OS cause', async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(acquire(file)).rejects.toThrow(/cannot use the test folder .*a-file: EEXIST/);
  });
});
