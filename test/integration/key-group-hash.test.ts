import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSluice } from './sluice-process.ts';

/**
 * `keyBy(f, { keyGroups: 'kinesis-hash' })` through `sluice run`, embedded: routing, keyed state and timers all use
 * the MD5 key groups, so the output equals the murmur job's, also across a failure restored from a checkpoint (a
 * key restored into the wrong key group would fail the restore or lose its state), and a checkpoint of one hash
 * is not restored into a job with the other.
 */

const JOB = 'test/fixtures/jobs/key-group-hash-counts.ts';
const EVENTS = 40_000;
let dir: string;
/** The murmur job's output, sorted lines. */
let reference: string[];

function outputLines(out: string): string[] {
  return readdirSync(out)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(join(out, f), 'utf8').split('\n').filter((l) => l.length > 0))
    .sort();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-kg-hash-'));
  const out = join(dir, 'murmur');
  const run = await runSluice(['run', JOB, '--output', out, '--events', String(EVENTS), '--parallelism', '2']);
  expect(run.code, run.stderr).toBe(0);
  reference = outputLines(out);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('keyBy with kinesis-hash key groups, embedded', () => {
  it('gives the murmur job\'s results at parallelism 3', async () => {
    const out = join(dir, 'kinesis-p3');
    const run = await runSluice(['run', JOB, '--output', out, '--events', String(EVENTS), '--parallelism', '3', '--key-groups', 'kinesis-hash']);
    expect(run.code, run.stderr).toBe(0);
    expect(reference.length).toBeGreaterThan(1000);
    expect(outputLines(out)).toEqual(reference);
  }, 120_000);

  it('restores its RocksDB state and timers after a failure and still gives the same results', async () => {
    const out = join(dir, 'kinesis-restart');
    const marker = join(dir, 'failed-once');
    const run = await runSluice([
      'run', JOB, '--output', out, '--events', String(EVENTS), '--parallelism', '3', '--key-groups', 'kinesis-hash',
      '--checkpoint-dir', join(dir, 'ck-restart'), '--checkpoint-interval-ms', '100',
      '--state-backend', 'rocksdb', '--state-dir', join(dir, 'state'),
      '--fail-marker', marker, '--fail-at-ts', '1012000', '--restart-delay-ms', '10',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(marker)).toBe(true);
    expect(run.stderr).toMatch(/failing once/);
    expect(outputLines(out)).toEqual(reference);
  }, 120_000);

  it('refuses to restore a checkpoint taken with the other hash, naming it', async () => {
    const out = join(dir, 'refuse');
    const ck = join(dir, 'ck-refuse');
    const first = await runSluice(['run', JOB, '--output', out, '--events', '2000', '--key-groups', 'kinesis-hash', '--checkpoint-dir', ck]);
    expect(first.code, first.stderr).toBe(0);
    const second = await runSluice(['run', JOB, '--output', out, '--events', '2000', '--checkpoint-dir', ck]);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/key-group hash \(keyBy's keyGroups\) kinesis-hash in the checkpoint, murmur in the job/);
  }, 120_000);
});
