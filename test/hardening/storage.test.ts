// Issue 11, item 3, as a user meets it: `sluice run` as a child process on real files. Failing checkpoint storage
// (a full disk, a checkpoint folder that becomes unusable) ends the job with exit 1, boundedly, naming the cause.
// Item 4 (one job per folder) is in storage-locks.test.ts.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { restUrl, waitFor } from '../integration/sluice-process.ts';
import { completeCheckpoints, expectExactOutput, generateInput, referenceTotals, runChild, startChild, type InputSpec } from '../crash/crash-harness.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-hardening-storage-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SPEC: InputSpec = { records: 4000, accounts: 20, t0: 1_700_000_000_000, stepMs: 50, maxDelayMs: 2000, windowMs: 10_000, malformedAfter: [] };
const input = join(root, 'transactions.jsonl');
const generated = generateInput(SPEC, 7);
writeFileSync(input, generated.text);
const reference = referenceTotals(generated.records, SPEC.windowMs);

let runs = 0;
/** A fresh output and checkpoint folder for one run of the crash-window job. */
function paths(): { output: string; checkpoints: string } {
  const dir = join(root, `run-${++runs}`);
  mkdirSync(dir);
  return { output: join(dir, 'out'), checkpoints: join(dir, 'checkpoints') };
}

function windowJob(output: string, checkpoints: string, ...extra: string[]): string[] {
  return ['run', 'test/fixtures/crash-window-job.ts', '--input', input, '--output', output, '--checkpoint-dir', checkpoints, ...extra];
}

/** Lines saying a checkpoint was aborted. */
const abortLines = (stderr: string): string[] => stderr.split('\n').filter((l) => /checkpoint \d+ aborted/.test(l));

// Generous bounds: on a loaded machine each child process takes seconds to start.
describe('failing checkpoint storage fails the job, boundedly', { timeout: 180_000 }, () => {
  it('a full disk: the final checkpoint is retried with backoff, then the job exits 1 naming ENOSPC and the file', async () => {
    const { output, checkpoints } = paths();
    const started = Date.now();
    const run = await runChild(windowJob(output, checkpoints, '--restart-strategy', 'none'), {
      env: { SLUICE_FAIL_AT: 'checkpoint-write:1+' },
      // Before the fix the job never ended; the bound makes that a failure rather than a hung test.
      killAfterMs: 90_000,
    });
    expect(run.killedByTest, run.stderr.slice(0, 2000)).toBe(false);
    expect(run.code, run.stderr).toBe(1);
    // Default --tolerable-checkpoint-failures 3: the fourth failure in a row ends the job.
    expect(run.stderr).toMatch(/error: job "crash-window" failed: 4 checkpoints failed in a row, more than the 3 tolerated \(--tolerable-checkpoint-failures\)/);
    expect(run.stderr).toMatch(/could not write task state file .*checkpoints\/chk-\d+\/task-\d+-\d+(-e\d+)?\.state: ENOSPC: no space left on device/);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    // Bounded: a few lines, not a flood; the repeated warning is summarised.
    expect(run.stderr.length).toBeLessThan(5000);
    expect(abortLines(run.stderr).length).toBeLessThanOrEqual(3);
    expect(run.stderr).toMatch(/more like it since the last report/);
    // Backoff (0.5 + 1 + 2 s between the four tries) instead of retrying at once.
    expect(Date.now() - started).toBeGreaterThan(3000);
    expect(completeCheckpoints(checkpoints)).toEqual([]);
  });

  it('a disk full for a moment: the failed checkpoints are tolerated and the job finishes with exact output', async () => {
    const { output, checkpoints } = paths();
    const run = await runChild(windowJob(output, checkpoints, '--checkpoint-interval-ms', '100'), {
      env: { SLUICE_FAIL_AT: 'checkpoint-write:1,checkpoint-write:2' },
      killAfterMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(abortLines(run.stderr).length).toBeGreaterThanOrEqual(1);
    expectExactOutput(output, reference, 'after two failed checkpoint writes');
  });

  it('a checkpoint folder that becomes unusable while the job runs: exit 1 naming the OS error and the path', async () => {
    const { output, checkpoints: unused } = paths();
    // The folder's parent is replaced by a plain file while the job runs: every write below it fails with ENOTDIR,
    // as a folder made unwritable would (tests run as root, where chmod does not stop writes).
    const parent = join(unused, '..', 'parent');
    const checkpoints = join(parent, 'checkpoints');
    const job = startChild([
      'run', 'test/fixtures/jobs/throttled-window-counts.ts', '--output', output, '--events', '1000000', '--rate', '2000',
      '--checkpoint-dir', checkpoints, '--checkpoint-interval-ms', '200',
    ]);
    try {
      await waitFor('the first complete checkpoint', () => (completeCheckpoints(checkpoints).length > 0 ? true : undefined), 90_000);
      expect(restUrl(checkpoints)).toBeDefined();
      renameSync(parent, `${parent}.moved`);
      writeFileSync(parent, 'not a folder\n');
      const run = await Promise.race([job.done, new Promise<undefined>((r) => setTimeout(r, 90_000, undefined))]);
      expect(run, 'the job did not end within 90 s').toBeDefined();
      expect(run!.code, run!.stderr).toBe(1);
      expect(run!.stderr).toMatch(/checkpoints failed in a row, more than the 3 tolerated/);
      // The first write below the folder to fail is a checkpoint's file or the fence record read before it.
      expect(run!.stderr).toMatch(new RegExp(`${checkpoints.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/(chk-|_fence)`));
      expect(run!.stderr).toMatch(/ENOTDIR: not a directory/);
      expect(run!.stderr).not.toMatch(/\n\s+at /);
      expect(run!.stderr.length).toBeLessThan(10_000);
    } finally {
      job.kill();
      if (existsSync(parent)) rmSync(parent, { recursive: true, force: true });
    }
  });
});
