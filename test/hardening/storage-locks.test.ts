// Issue 11, item 4, as a user meets it: `sluice run` as child processes on real folders, with SIGKILL. A second job
// on a checkpoint folder or RocksDB state folder that a running job holds is refused with exit 2 naming the holder,
// before it touches anything; the holder runs on; after kill -9 of the holder the same command runs again.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../integration/sluice-process.ts';
import { committedLines, completeCheckpoints, runChild, startChild, type StartedChild } from '../crash/crash-harness.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-hardening-locks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let runs = 0;
/** A fresh output and checkpoint folder for one job. */
function paths(): { output: string; checkpoints: string } {
  const dir = join(root, `run-${++runs}`);
  mkdirSync(dir);
  return { output: join(dir, 'out'), checkpoints: join(dir, 'checkpoints') };
}

/**
 * The throttled generator job. At `--rate 500` it runs far longer than a test waits for it (a second job can meet it
 * however loaded the machine is); the test kills it and reruns the same job at a high rate, which only throttles.
 */
function throttledJob(output: string, checkpoints: string, rate: number, ...extra: string[]): string[] {
  return [
    'run', 'test/fixtures/jobs/throttled-window-counts.ts', '--output', output, '--events', String(EVENTS), '--rate', String(rate),
    '--checkpoint-dir', checkpoints, '--checkpoint-interval-ms', '300', ...extra,
  ];
}
const EVENTS = 12_000;

/** Every generated record is counted in exactly one committed window row, and no window is written twice. */
function expectEveryEventOnce(output: string, context: string): void {
  const rows = committedLines(output).map((l) => JSON.parse(l) as { account: string; windowStart: number; count: number });
  const windows = rows.map((r) => `${r.account}@${r.windowStart}`);
  expect(new Set(windows).size, `${context}: a window written twice`).toBe(windows.length);
  expect(rows.reduce((sum, r) => sum + r.count, 0), context).toBe(EVENTS);
}

const lockPid = (dir: string): number => (JSON.parse(readFileSync(join(dir, 'sluice.lock'), 'utf8')) as { pid: number }).pid;

/** Waits until the job has completed `n` checkpoints in its folder (more than it had): it is running. */
async function checkpointsPast(checkpoints: string, n: number): Promise<void> {
  // Generous: on a loaded machine a job may take many seconds to start.
  await waitFor(`a checkpoint after ${n}`, () => (completeCheckpoints(checkpoints).some((id) => id > n) ? true : undefined), 90_000);
}

/**
 * Kills the first job with SIGKILL, as a crash would, and runs its command again (at a rate that no longer
 * throttles): the lock the killed job left does not block the rerun, which resumes and ends with exact output.
 */
async function killAndRerun(first: StartedChild, args: (rate: number) => string[], output: string, checkpoints: string): Promise<void> {
  first.kill();
  expect((await first.done).signal).toBe('SIGKILL');
  expect(existsSync(join(checkpoints, 'sluice.lock')), 'the killed job left its lock file').toBe(true);
  const rerun = await runChild(args(1_000_000), { killAfterMs: 90_000 });
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(rerun.stderr).toMatch(/restored from checkpoint \d+/);
  expectEveryEventOnce(output, 'killed and rerun');
  expect(existsSync(join(checkpoints, 'sluice.lock')), 'the lock is released at the end').toBe(false);
}

// Generous bounds: on a loaded machine each child process takes seconds to start.
describe('one job per checkpoint directory and state directory', { timeout: 180_000 }, () => {
  it('refuses a second job on a checkpoint directory in use (exit 2, naming the holder); the first runs on; after kill -9 the same command reruns', async () => {
    const { output, checkpoints } = paths();
    const args = (rate: number): string[] => throttledJob(output, checkpoints, rate);
    const first = startChild(args(500));
    try {
      await checkpointsPast(checkpoints, 0);
      const pid = lockPid(checkpoints);
      expect(pid).toBe(first.child.pid);
      // Another job (another output, another pace), as a user who reused the folder by mistake would start it.
      const second = await runChild(throttledJob(join(root, 'second-output'), checkpoints, 2000), { killAfterMs: 90_000 });
      expect(second.code, second.stderr).toBe(2);
      expect(second.stderr).toMatch(
        new RegExp(`^error: the checkpoint directory ${checkpoints} is in use by another job: pid ${pid} on \\S+ since \\d{4}-\\d\\d-\\d\\dT[^\\n]*--checkpoint-dir`),
      );
      expect(second.stderr).not.toMatch(/\n\s+at /);
      // It changed nothing: the first job still owns the folder and its REST endpoint, and goes on checkpointing.
      expect(lockPid(checkpoints)).toBe(pid);
      expect((JSON.parse(readFileSync(join(checkpoints, 'rest.json'), 'utf8')) as { pid: number }).pid).toBe(pid);
      await checkpointsPast(checkpoints, Math.max(...completeCheckpoints(checkpoints)));
      await killAndRerun(first, args, output, checkpoints);
    } finally {
      first.kill();
    }
  });

  it('refuses a second RocksDB job on a state directory in use, and the first one\'s databases survive for its rerun', async () => {
    const a = paths();
    const b = paths();
    const state = join(root, `shared-state-${runs}`);
    const args = (rate: number): string[] => throttledJob(a.output, a.checkpoints, rate, '--state-backend', 'rocksdb', '--state-dir', state);
    const first = startChild(args(500));
    try {
      await checkpointsPast(a.checkpoints, 0);
      const pid = lockPid(state);
      expect(pid).toBe(first.child.pid);
      // The same job with its own output and checkpoint folder, but the same state folder.
      const second = await runChild(throttledJob(b.output, b.checkpoints, 500, '--state-backend', 'rocksdb', '--state-dir', state), {
        killAfterMs: 90_000,
      });
      expect(second.code, second.stderr).toBe(2);
      expect(second.stderr).toMatch(new RegExp(`^error: the state directory ${state} is in use by another job: pid ${pid} on [^\\n]*--state-dir`));
      expect(completeCheckpoints(b.checkpoints), 'the refused job did not run').toEqual([]);
      expect(existsSync(b.output), 'the refused job did not run').toBe(false);
      await checkpointsPast(a.checkpoints, Math.max(...completeCheckpoints(a.checkpoints)));
      await killAndRerun(first, args, a.output, a.checkpoints);
      expect(existsSync(join(state, 'sluice.lock'))).toBe(false);
    } finally {
      first.kill();
    }
  });
});
