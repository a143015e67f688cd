// Restoring as a user does it: `sluice run` child processes on real files, re-run against a checkpoint folder that
// was damaged or that belongs to a job whose operators changed (window size, accumulator, a state's kind, an
// operator removed). Every refusal is exit code 2 with a message that
// names the problem and the flag that gets past it, and leaves the committed output as it was.
import { appendFileSync, cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedLines, completeCheckpoints, diffLines, expectExactOutput, generateInput, referenceTotals, type InputSpec, type Reference } from '../crash/crash-harness.ts';
import { runSluice, type SluiceRun } from '../integration/sluice-process.ts';

const JOB = 'test/fixtures/jobs/restore-compat-job.ts';
const SPEC: InputSpec = { records: 3000, accounts: 17, t0: 1_700_000_000_000, stepMs: 20, maxDelayMs: 5000, windowMs: 10_000, malformedAfter: [] };
const TIMEOUT = 180_000;

let root: string;
let input: string;
let reference: Reference;

/** `sluice run` of the fixture job with its checkpoint folder and output directory under `dir`. */
function run(dir: string, extra: readonly string[] = [], output = join(dir, 'out')): Promise<SluiceRun> {
  return runSluice(['run', JOB, '--input', input, '--output', output, '--checkpoint-dir', join(dir, 'ck'), '--checkpoint-interval-ms', '30', '--pause-every', '5', ...extra]);
}

/** A copy of a finished run (checkpoint folder and output) to damage or change. */
function copyOf(base: string, name: string): string {
  const dir = join(root, name);
  cpSync(base, dir, { recursive: true });
  return dir;
}

/** Appends garbage to a task state file of checkpoint `id`: it no longer matches its sha256. */
function corrupt(dir: string, id: number): void {
  const chk = join(dir, 'ck', `chk-${String(id).padStart(10, '0')}`);
  const file = readdirSync(chk).find((f) => f.endsWith('.state'))!;
  appendFileSync(join(chk, file), 'garbage');
}

function expectRefused(result: SluiceRun, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr, 'no stack trace for a configuration error').not.toMatch(/\n\s+at /);
}

let finished: string;
let finishedWithDedup: string;
let rocksdbWithDedup: string;
const rocksdb = (dir: string) => ['--state-backend', 'rocksdb', '--state-dir', join(dir, 'state')];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sluice-hardening-restore-'));
  const generated = generateInput(SPEC, 7);
  input = join(root, 'transactions.jsonl');
  writeFileSync(input, generated.text);
  reference = referenceTotals(generated.records, SPEC.windowMs);
  finished = join(root, 'finished');
  finishedWithDedup = join(root, 'finished-dedup');
  rocksdbWithDedup = join(root, 'rocksdb-dedup');
  const [plain, dedup, onRocksdb] = await Promise.all([
    run(finished),
    run(finishedWithDedup, ['--dedup']),
    run(rocksdbWithDedup, [...rocksdb(rocksdbWithDedup), '--dedup']),
  ]);
  for (const [result, dir] of [[plain, finished], [dedup, finishedWithDedup], [onRocksdb, rocksdbWithDedup]] as const) {
    expect(result.code, result.stderr).toBe(0);
    expectExactOutput(join(dir, 'out'), reference, dir);
    // The final checkpoint and at least one before it: a fallback has somewhere to go.
    expect(completeCheckpoints(join(dir, 'ck')).length).toBeGreaterThanOrEqual(2);
  }
}, TIMEOUT);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.concurrent('restoring a damaged or changed checkpoint folder with sluice run', () => {
  it('a corrupt latest checkpoint whose output is committed: exit 2 and no duplicates; --allow-replay falls back', async () => {
    const dir = copyOf(finished, 'corrupt-latest');
    const ids = completeCheckpoints(join(dir, 'ck'));
    const latest = ids[ids.length - 1]!;
    corrupt(dir, latest);
    expectRefused(
      await run(dir),
      new RegExp(`checkpoint ${latest} in .* is corrupt:\\n  checkpoint ${latest}: checkpoint file .* is unusable: .*\\nfalling back to checkpoint \\d+ would replay the output committed by checkpoint ${latest}.*--allow-replay`, 's'),
    );
    expectExactOutput(join(dir, 'out'), reference, 'after the refusal');

    const replayed = await run(dir, ['--allow-replay']);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stderr).toMatch(new RegExp(`warning: --allow-replay: checkpoint ${latest} corrupt; falling back to checkpoint \\d+`));
    expect(replayed.stderr).toMatch(/restored from checkpoint \d+/);
    expect(diffLines(committedLines(join(dir, 'out')), reference).lost).toBe(0);
  }, TIMEOUT);

  it('every checkpoint corrupt: exit 2 even with --allow-replay; --fresh starts over', async () => {
    const dir = copyOf(finished, 'all-corrupt');
    const ids = completeCheckpoints(join(dir, 'ck'));
    for (const id of ids) corrupt(dir, id);
    const beginning = /no complete checkpoint is left to restore from: starting anyway would start from the beginning and write again all output committed by checkpoints .*--fresh/s;
    // Refused without the flag too (the unit tests of planRestore show it); the flag does not make it acceptable.
    expectRefused(await run(dir, ['--allow-replay']), beginning);
    expectExactOutput(join(dir, 'out'), reference, 'after the refusals');

    const fresh = await run(dir, ['--fresh'], join(dir, 'out-fresh'));
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stderr).toMatch(new RegExp(`--fresh: discarded ${ids.length} checkpoint\\(s\\)`));
    expectExactOutput(join(dir, 'out-fresh'), reference, 'fresh run');
  }, TIMEOUT);

  it('another --window-ms: exit 2 naming the operator and both sizes', async () => {
    const dir = copyOf(finished, 'window-size');
    expectRefused(
      await run(dir, ['--window-ms', '20000']),
      /operator "account totals": window size 10000 ms in the checkpoint, 20000 ms in the job\n.*--fresh/,
    );
    expectExactOutput(join(dir, 'out'), reference, 'after the refusal');
  }, TIMEOUT);

  it('another accumulator type under the same operator name: exit 2 naming the accumulators', async () => {
    const dir = copyOf(finished, 'accumulator');
    expectRefused(
      await run(dir, ['--accumulator', 'text']),
      /operator "account totals": accumulator object \{count, totalCents\} in the checkpoint, string in the job/,
    );
    expect(committedLines(join(dir, 'out')).some((l) => l.includes('[object Object]'))).toBe(false);
  }, TIMEOUT);

  it('a removed stateful operator: exit 2 naming it unless --allow-non-restored-state', async () => {
    const dir = copyOf(finishedWithDedup, 'removed-operator');
    expectRefused(await run(dir), /state of operators the job no longer has: "dedup" \(keyed process\)\. Pass --allow-non-restored-state/);
    const allowed = await run(dir, ['--allow-non-restored-state']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/warning: --allow-non-restored-state: dropping the state of "dedup" \(keyed process\)/);
    expect(allowed.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(join(dir, 'out'), reference, 'after restoring without dedup');
  }, TIMEOUT);

  it('a state declared with another kind under the same name: exit 2 naming the operator and the state', async () => {
    const dir = copyOf(finishedWithDedup, 'state-kind');
    const refused = await run(dir, ['--dedup', '--dedup-state', 'list']);
    expectRefused(refused, /error: operator "dedup": state "last-ts" is value state without TTL in the checkpoint but list state without TTL in the job/);
    expect(refused.stderr, 'a restart cannot fix it').not.toMatch(/restart 1 in/);
    expectExactOutput(join(dir, 'out'), reference, 'after the refusal');
  }, TIMEOUT);

  it('with RocksDB state: a removed operator is refused, and with --allow-non-restored-state the rest restores exactly', async () => {
    const dir = rocksdbWithDedup;
    expectRefused(await run(dir, rocksdb(dir)), /state of operators the job no longer has: "dedup" \(keyed process\)/);
    const allowed = await run(dir, [...rocksdb(dir), '--allow-non-restored-state']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(join(dir, 'out'), reference, 'after restoring without dedup on RocksDB');
  }, TIMEOUT);

  it('a damaged restore.json: exit 2 naming it; --fresh starts over', async () => {
    const dir = copyOf(finished, 'damaged-marker');
    writeFileSync(join(dir, 'ck', 'restore.json'), '{"source": "/sp');
    expectRefused(await run(dir), /restore\.json in .* is not a valid restore record/);
    const fresh = await run(dir, ['--fresh'], join(dir, 'out-fresh'));
    expect(fresh.code, fresh.stderr).toBe(0);
    expectExactOutput(join(dir, 'out-fresh'), reference, 'fresh run');
  }, TIMEOUT);
});
