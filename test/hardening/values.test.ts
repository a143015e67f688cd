// Values out of range are rejected, not mangled: the `sluice` CLI run as a user runs it, on real files. Bad
// timestamps and amounts land in the dead-letter file with their reasons and the rest of the output is exact; what
// cannot be dead-lettered (an overflowing sum, a bad timestamp without a dead-letter file) fails the job by name.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines, expectExactOutput, generateInput, referenceTotals, runChild, type InputSpec } from '../crash/crash-harness.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-values-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let runs = 0;
const fresh = (): { dir: string; input: string; output: string; deadLetter: string; checkpoints: string } => {
  const dir = join(root, String(runs++));
  mkdirSync(dir);
  return { dir, input: join(dir, 'in.jsonl'), output: join(dir, 'out'), deadLetter: join(dir, 'dead.jsonl'), checkpoints: join(dir, 'ck') };
};

const SPEC: InputSpec = { records: 4_000, accounts: 40, t0: 1_700_000_000_000, stepMs: 5, maxDelayMs: 2_000, windowMs: 10_000, malformedAfter: [] };
const TWO_POW_60 = '1152921504606846976';

/** Lines a careless producer writes, each with the reason the job must give; inserted between good lines. */
const BAD: readonly [line: string, reason: RegExp][] = [
  [`{"account":"a-1","amountCents":100,"ts":1e300}`, /"ts": event timestamp 1e\+300 is outside the range of dates/],
  [`{"account":"a-1","amountCents":100,"ts":-1e300}`, /"ts": event timestamp -1e\+300 is outside the range of dates/],
  [`{"account":"a-1","amountCents":100,"ts":${TWO_POW_60}}`, /"ts": event timestamp 1152921504606847000 is outside the range of dates/],
  [`{"account":"a-1","amountCents":100,"ts":"1700000000000"}`, /"ts": event timestamp "1700000000000" is a string/],
  [`{"account":"a-1","amountCents":100,"ts":1700000000000.5}`, /"ts": event timestamp 1700000000000\.5 is not a whole number/],
  [`{"account":"a-2","amountCents":${TWO_POW_60},"ts":1700000000100}`, /"amountCents" must be a whole number of cents .* got 1152921504606847000 \(as parsed/],
  [`{"account":"a-2","amountCents":12.5,"ts":1700000000100}`, /"amountCents" must be a whole number of cents/],
];

function fraudArgs(p: ReturnType<typeof fresh>, extra: readonly string[] = []): string[] {
  return ['run', 'examples/fraud-detection.ts', '--input', p.input, '--output', p.output, '--checkpoint-dir', p.checkpoints, ...extra];
}

describe('fraud-detection with values out of range', () => {
  it('sends every bad line to --dead-letter with its reason and line number; the window totals are exact (p=2)', async () => {
    const p = fresh();
    const generated = generateInput(SPEC, 11);
    const good = generated.text.trimEnd().split('\n');
    // Bad lines spread over the file, so both range splits of p=2 meet some.
    const lines = [...good];
    const at: number[] = [];
    BAD.forEach(([line], i) => {
      const index = Math.floor(((i + 1) * good.length) / (BAD.length + 1)) + i;
      lines.splice(index, 0, line);
      at.push(index + 1);
    });
    writeFileSync(p.input, lines.join('\n') + '\n');
    const run = await runChild(fraudArgs(p, ['--parallelism', '2', '--dead-letter', p.deadLetter]));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`${generated.records.length.toLocaleString('en-US')} records read`);
    expectExactOutput(p.output, referenceTotals(generated.records, SPEC.windowMs), 'fraud-detection p=2');
    const letters = readFileSync(p.deadLetter, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; raw: string; error: string; file: string })
      .sort((a, b) => a.line - b.line);
    expect(letters.map((l) => [l.line, l.raw])).toEqual(BAD.map(([line], i) => [at[i], line]));
    letters.forEach((letter, i) => expect(letter.error).toMatch(BAD[i]![1]));
    expect(committedLines(p.output).join('\n')).not.toContain('null');
  }, 60_000);

  it('a window total leaving the safe-integer range fails the job naming the account, and writes no rounded total', async () => {
    const p = fresh();
    const max = Number.MAX_SAFE_INTEGER;
    writeFileSync(
      p.input,
      [
        `{"account":"rich","amountCents":${max},"ts":1700000000000}`,
        `{"account":"rich","amountCents":${max},"ts":1700000000001}`,
        '{"account":"plain","amountCents":5,"ts":1700000000002}',
      ].join('\n') + '\n',
    );
    const run = await runChild(fraudArgs(p, ['--restart-attempts', '0']));
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('operator: account totals');
    expect(run.stderr).toContain(`record:   split ${p.input}#0 offset 69`);
    expect(run.stderr).toContain('the total of account "rich" in this window left the safe-integer range');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(committedLines(p.output)).toEqual([]);
  }, 60_000);
});

describe('a job that takes timestamps unchecked (engine validation)', () => {
  const lines = [
    '{"key":"k","ts":1000}',
    '{"key":"k","ts":1e300}',
    '{"key":"k","ts":"soon"}',
    '{"key":"k","ts":9007199254740000}',
    '{"key":"k","ts":-5}',
    '{"key":"k","ts":10000}',
  ];

  it('dead-letters records with invalid timestamps and counts the rest in exact 10-second windows', async () => {
    const p = fresh();
    writeFileSync(p.input, lines.join('\n') + '\n');
    const args = ['run', 'test/fixtures/jobs/stamped-lines.ts', '--input', p.input, '--output', p.output, '--checkpoint-dir', p.checkpoints];
    const run = await runChild([...args, '--dead-letter', p.deadLetter]);
    expect(run.code, run.stderr).toBe(0);
    expect(committedLines(p.output).sort()).toEqual([
      '{"key":"k","windowStart":-10000,"windowEnd":0,"count":1}',
      '{"key":"k","windowStart":0,"windowEnd":10000,"count":1}',
      '{"key":"k","windowStart":10000,"windowEnd":20000,"count":1}',
    ]);
    const letters = readFileSync(p.deadLetter, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { line: number; error: string });
    expect(letters.map((l) => l.line)).toEqual([2, 3, 4]);
    expect(letters.map((l) => l.error)).toEqual([
      'event timestamp 1e+300 is outside the range of dates (-8.64e15 to 8.64e15 epoch milliseconds)',
      'event timestamp "soon" is a string, not a number (epoch milliseconds)',
      'event timestamp 9007199254740000 is outside the range of dates (-8.64e15 to 8.64e15 epoch milliseconds)',
    ]);
  }, 60_000);

  it('without a dead-letter file fails (exit 1) naming the split, offset and value, and commits nothing', async () => {
    const p = fresh();
    writeFileSync(p.input, lines.join('\n') + '\n');
    const run = await runChild(['run', 'test/fixtures/jobs/stamped-lines.ts', '--input', p.input, '--output', p.output, '--checkpoint-dir', p.checkpoints, '--restart-attempts', '0']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`record from split ${p.input}#0 offset 22: event timestamp 1e+300 is outside the range of dates`);
    expect(committedLines(p.output)).toEqual([]);
  }, 60_000);
});
