import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { runSluice, startSluice, waitFor } from './sluice-process.ts';

// `sluice run` at a parallelism far above the processors: subtasks share a few worker threads instead of taking
// one thread (and one heap) each, and the output is the same as at parallelism 1.
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sluice-shared-threads-'));
  dirs.push(d);
  return d;
};
const children: ChildProcess[] = [];
afterAll(() => {
  // A run left behind by a failed assertion or a timeout must not go on loading the machine.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

function readOutput(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.length > 0))
    .sort();
}

describe('subtasks sharing worker threads', () => {
  it('writes exactly the windows of parallelism 1 at parallelism 100', async () => {
    const run = async (parallelism: number) => {
      const output = tempDir();
      const result = await runSluice(['run', 'test/fixtures/jobs/window-counts.ts', '--output', output, '--events', '3000', '--parallelism', String(parallelism)]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('3,000 records read');
      return { lines: readOutput(output), stderr: result.stderr };
    };
    const p1 = await run(1);
    const p100 = await run(100);
    expect(p1.lines.length).toBeGreaterThan(100);
    expect(p100.lines).toEqual(p1.lines);
    // More subtasks than processors is no longer worth a warning: they share the threads.
    expect(p100.stderr).not.toContain('warning:');
  }, 300_000);

  it('runs parallelism 100 on at most one worker thread per processor, or on --threads of them (at most the parallelism)', async () => {
    const threadsOf = async (parallelism: number, extra: string[] = []): Promise<number> => {
      const { child, done } = startSluice(['run', 'test/fixtures/endless-job.ts', '--output', tempDir(), '--parallelism', String(parallelism), ...extra]);
      children.push(child);
      let stderr = '';
      child.stderr!.on('data', (s: string) => (stderr += s));
      try {
        const url = await waitFor('the REST API line', () => /REST API on (http:\/\/\S+)/.exec(stderr)?.[1], 120_000);
        const { jobs } = (await (await fetch(`${url}/jobs`)).json()) as { jobs: { id: string }[] };
        const job = jobs[0];
        const details = (await (await fetch(`${url}/jobs/${job!.id}`)).json()) as { parallelism: number; workerThreads: number };
        expect(details.parallelism).toBe(parallelism);
        return details.workerThreads;
      } finally {
        child.kill('SIGTERM');
        await done;
      }
    };
    const byDefault = await threadsOf(100);
    expect(byDefault).toBeGreaterThanOrEqual(1);
    expect(byDefault).toBeLessThanOrEqual(availableParallelism());
    expect(byDefault).toBe(Math.min(100, availableParallelism()));
    expect(await threadsOf(100, ['--threads', '3'])).toBe(3);
    // Above the parallelism: lowered to it.
    expect(await threadsOf(2, ['--threads', '500'])).toBe(2);
  }, 300_000);
});
