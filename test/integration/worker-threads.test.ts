import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generatorSource, runOnThreads, JobFailedError, systemClock } from '../../lib/index.ts';
import { generatedTransactions, windowTotalLines } from '../harness/generated-transactions.ts';

const JOB = 'test/fixtures/jobs/window-counts.ts';
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sluice-threads-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The job's expected output from a plain loop over the same generated records. */
async function reference(events: number): Promise<string[]> {
  const input = await generatedTransactions({ count: events, keyCount: 50, seed: 3, startTime: 1_000_000, maxOutOfOrdernessMs: 200 });
  return windowTotalLines(input, 1000);
}

function readOutput(dir: string): string[] {
  const files = readdirSync(dir);
  expect(files.filter((f) => f.startsWith('.'))).toEqual([]);
  return files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.length > 0)).sort();
}

describe('worker threads', () => {
  it.each([1, 2, 3])('parallelism %i gives exactly the reference windows', async (parallelism) => {
    const out = tempDir();
    const result = await runOnThreads({ modulePath: JOB, flags: { output: out, events: 30_000 }, jobOptions: { parallelism } });
    expect(result.sourceRecords).toBe(30_000);
    expect(new Set(result.tasks.map((t) => t.subtask)).size).toBe(parallelism);
    expect(readOutput(out)).toEqual(await reference(30_000));
  });

  it('fails with the operator, subtask and record origin from the worker, and stops every thread', async () => {
    const out = tempDir();
    // Find an amount that the generator produces.
    const source = generatorSource({ count: 30_000, keyCount: 50, seed: 3, startTime: 1_000_000, maxOutOfOrdernessMs: 200 });
    const reader = await source.createReader(await source.createSplits({ parallelism: 2 }), { subtask: 0, parallelism: 2, clock: systemClock, signal: new AbortController().signal });
    const first = await reader.poll(600);
    if (first.kind !== 'batch') throw new Error('generator produced nothing');
    const victim = first.batch.values[500]!.amountCents;
    const error = await runOnThreads({ modulePath: JOB, flags: { output: out, events: 30_000, failAt: victim }, jobOptions: { parallelism: 2 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    const message = (error as Error).message;
    expect(message).toMatch(/operator "Validate" \(subtask \d\) failed on record from split generator-\dof2 offset \d+: poisoned amount/);
  });
});
