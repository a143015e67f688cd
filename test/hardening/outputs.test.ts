// Issue 11, items 1 and 10, as a user meets them: the fraud-detection example run as a child process on real files.
// Its late-events and dead-letter files never destroy a file (the input, a user's file, another job's output), are
// exactly once after a kill -9 and a rerun of the same command, and every configuration mistake about an output
// path exits 2 with the OS cause and no stack trace.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeCheckpoints, expectExactOutput, referenceTotals, runChild, startChild, type Reference, type Txn } from '../crash/crash-harness.ts';
import { REPO_ROOT, waitFor } from '../integration/sluice-process.ts';
import { seededRandom } from '../harness/seeded-random.ts';

const JOB = 'examples/fraud-detection.ts';
const T0 = 1_700_000_000_000;
const MAX_DELAY_MS = 2000;
const WINDOW_MS = 5000;
const RECORDS = 150_000;

interface Input {
  readonly text: string;
  /** On-time records, in file order. */
  readonly onTime: Txn[];
  /** The late records' input lines, in file order. */
  readonly lateLines: string[];
  /** 1-based numbers of the malformed lines and the lines themselves. */
  readonly malformed: { line: number; raw: string }[];
}

/**
 * On-time records are out of order by less than the max delay relative to the running maximum, so the watermark
 * never passes one. Every 10,000 records one lies an hour behind (late, in a window of its own); every 12,000 a
 * line is malformed.
 */
function generateInput(): Input {
  const next = seededRandom(11);
  const lines: string[] = [];
  const onTime: Txn[] = [];
  const lateLines: string[] = [];
  const malformed: { line: number; raw: string }[] = [];
  for (let i = 0; i < RECORDS; i++) {
    const t: Txn = {
      account: `a-${Math.floor(next() * 30)}`,
      amountCents: 1 + Math.floor(next() * 100_000),
      ts: T0 + i * 2 - Math.floor(next() * (MAX_DELAY_MS - 100)),
    };
    onTime.push(t);
    lines.push(JSON.stringify(t));
    if (i % 10_000 === 5_000) {
      lines.push(JSON.stringify({ account: `late-${i}`, amountCents: i, ts: T0 - 3_600_000 - i * WINDOW_MS }));
      lateLines.push(lines[lines.length - 1]!);
    }
    if (i % 12_000 === 6_000) {
      const raw = i % 24_000 === 6_000 ? `not json ${i}` : JSON.stringify({ account: `a-${i}`, amountCents: 'many', ts: T0 });
      lines.push(raw);
      malformed.push({ line: lines.length, raw });
    }
  }
  return { text: lines.join('\n') + '\n', onTime, lateLines, malformed };
}

let root: string;
let inputPath: string;
let input: Input;
let reference: Reference;
let caseNumber = 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sluice-hardening-outputs-'));
  input = generateInput();
  inputPath = join(root, 'transactions.jsonl');
  writeFileSync(inputPath, input.text);
  reference = referenceTotals(input.onTime, WINDOW_MS);
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function scenario(): { dir: string; output: string; checkpoints: string; late: string; dead: string } {
  const dir = join(root, `case-${++caseNumber}`);
  mkdirSync(dir);
  return { dir, output: join(dir, 'out'), checkpoints: join(dir, 'checkpoints'), late: join(dir, 'late.jsonl'), dead: join(dir, 'dead.jsonl') };
}

function args(extra: readonly string[]): string[] {
  return ['run', JOB, '--input', inputPath, '--max-delay-ms', String(MAX_DELAY_MS), '--window-ms', String(WINDOW_MS), ...extra];
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
}

/** The late file holds each late record once, in input order; the dead letters name each malformed line once. */
function expectExactSideOutputs(late: string, dead: string, context: string): void {
  expect(lines(late), `${context}: late events`).toEqual(input.lateLines);
  const letters = lines(dead).map((l) => JSON.parse(l) as { file: string; line: number; raw: string });
  expect(
    letters.map((d) => ({ line: d.line, raw: d.raw })).sort((a, b) => a.line - b.line),
    `${context}: dead letters`,
  ).toEqual(input.malformed);
  for (const d of letters) expect(d.file).toBe(inputPath);
}

/** A configuration mistake: exit 2, the message, no stack trace, and nothing started. */
function expectUsageError(run: { code: number | null; stderr: string }, message: RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toMatch(message);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  expect(run.stderr).not.toContain('records read');
}

describe('never destroy a user file (item 1)', () => {
  it('refuses a late-events or dead-letter file that is the input or an existing file not its own, and changes neither', async () => {
    const s = scenario();
    const before = readFileSync(inputPath);
    const link = join(s.dir, 'link.jsonl');
    symlinkSync(inputPath, link);
    const notes = join(s.dir, 'notes.txt');
    writeFileSync(notes, 'precious\n');
    const runs = await Promise.all([
      runChild(args(['--output', s.output, '--late-output', inputPath])),
      runChild(args(['--output', s.output, '--dead-letter', inputPath])),
      runChild(args(['--output', s.output, '--late-output', link])),
      runChild(args(['--output', s.output, '--late-output', notes])),
      runChild(args(['--output', s.output, '--dead-letter', notes, '--checkpoint-dir', s.checkpoints])),
    ]);
    const expected = [
      /--late-output .* is the job's input/,
      /--dead-letter .* is the job's input/,
      /--late-output .* is the job's input/,
      /--late-output .*notes\.txt already exists/,
      /--dead-letter .*notes\.txt already exists/,
    ];
    runs.forEach((run, i) => expectUsageError(run, expected[i]!));
    expect(readFileSync(inputPath).equals(before)).toBe(true);
    expect(readFileSync(notes, 'utf8')).toBe('precious\n');
  }, 90_000);

  it.concurrent('late events and dead letters are exactly once after a kill -9 and a rerun of the same command', async () => {
    const s = scenario();
    const command = args(['--output', s.output, '--late-output', s.late, '--dead-letter', s.dead, '--checkpoint-dir', s.checkpoints, '--checkpoint-interval-ms', '100']);
    const first = startChild(command);
    // Killed once a checkpoint is complete (so some late events and dead letters are committed), well before the
    // end: the input takes seconds, a checkpoint is taken every 100 ms.
    await waitFor('a complete checkpoint', () => (completeCheckpoints(s.checkpoints).length >= 1 ? true : undefined), 60_000);
    first.kill();
    const killed = await first.done;
    expect(killed.stderr).not.toContain('records read in');
    expect(killed.signal).toBe('SIGKILL');

    const rerun = await runChild(command);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(s.output, reference, 'after kill -9');
    expectExactSideOutputs(s.late, s.dead, 'after kill -9');

    // The job's own files: running the finished job again changes nothing; another job may not take them over.
    const [again, other] = await Promise.all([
      runChild(command),
      runChild(args(['--output', join(s.dir, 'out2'), '--late-output', s.late, '--checkpoint-dir', join(s.dir, 'other')])),
    ]);
    expect(again.code, again.stderr).toBe(0);
    expectUsageError(other, /--late-output .* already exists and it is the output of an earlier run/);
    expectExactSideOutputs(s.late, s.dead, 'after a second rerun and another job');
  }, 120_000);

  it.concurrent('late events committed by a checkpoint that completed just before the crash are appended by the rerun', async () => {
    const s = scenario();
    const command = args(['--output', s.output, '--late-output', s.late, '--dead-letter', s.dead, '--checkpoint-dir', s.checkpoints, '--checkpoint-interval-ms', '100']);
    // SIGKILL right after the metadata of the 3rd checkpoint is written, before any sink commits it.
    const crashed = await runChild(command, { env: { SLUICE_CRASH_AT: 'after-metadata-commit:3' } });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    const rerun = await runChild(command);
    expect(rerun.code, rerun.stderr).toBe(0);
    expectExactOutput(s.output, reference, 'after a crash before the commit');
    expectExactSideOutputs(s.late, s.dead, 'after a crash before the commit');
  }, 120_000);
});

describe('configuration mistakes exit 2 with the cause (item 10)', () => {
  it('an output, checkpoint or state folder that is a file, a side-output file that is a folder, an unwritable place; the malformed-lines hint names --dead-letter', async () => {
    const s = scenario();
    const file = join(s.dir, 'a-file');
    writeFileSync(file, 'x');
    const folder = join(s.dir, 'a-folder');
    mkdirSync(folder);
    const hint = runChild(args(['--output', join(s.dir, 'good')]));
    const runs = await Promise.all([
      runChild(args(['--output', file])),
      runChild(args(['--output', s.output, '--checkpoint-dir', file])),
      runChild(args(['--output', s.output, '--state-backend', 'rocksdb', '--state-dir', file])),
      runChild(args(['--output', s.output, '--late-output', folder])),
      runChild(args(['--output', s.output, '--dead-letter', folder])),
      runChild(args(['--output', join(file, 'out')])),
      runChild(args(['--output', s.output, '--late-output', join(file, 'late.jsonl')])),
    ]);
    const expected = [
      /--output .*a-file is a file, not a directory/,
      /--checkpoint-dir .*a-file is a file, not a directory/,
      /--state-dir .*a-file is a file, not a directory/,
      /--late-output .*a-folder is a directory/,
      /--dead-letter .*a-folder is a directory/,
      /--output .*a-file\/out .*ENOTDIR/,
      /--late-output .*a-file\/late\.jsonl.*ENOTDIR/,
    ];
    runs.forEach((run, i) => expectUsageError(run, expected[i]!));

    // Not a mistake, but the hint for malformed lines names the job's flag, not a library option.
    const run = await hint;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('pass --dead-letter FILE to keep them');
    expect(run.stderr).not.toContain('deadLetterPath');
  }, 90_000);
});

describe('the README\'s input file (item 11)', () => {
  it('npm start -- --write-input FILE writes the demo input only, and never over an existing file', async () => {
    const s = scenario();
    const file = join(s.dir, 'transactions.jsonl');
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const written = await promisify(execFile)(tsx, ['examples/demo.ts', '--write-input', file], { cwd: REPO_ROOT });
    expect(written.stdout).toContain(`to ${file}`);
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n').filter((l) => l.length > 0).length).toBe(1_000_022);
    const again = await promisify(execFile)(tsx, ['examples/demo.ts', '--write-input', file], { cwd: REPO_ROOT }).catch((err: { code: number; stderr: string }) => err);
    expect('code' in again ? again.code : 0).toBe(2);
    expect(readFileSync(file, 'utf8') === text).toBe(true);
  }, 90_000);
});
