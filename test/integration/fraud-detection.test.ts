import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSluice } from './sluice-process.ts';
import { seededRandom as random } from '../harness/seeded-random.ts';

const JOB = 'examples/fraud-detection.ts';
const T0 = 1_700_000_000_000;
const MAX_DELAY_MS = 2000;
const WINDOW_MS = 5000;
const ON_TIME_EVENTS = 30_000;
const ACCOUNTS = 40;

interface Txn {
  account: string;
  amountCents: number;
  ts: number;
}

interface WindowRow {
  account: string;
  windowStart: number;
  windowEnd: number;
  count: number;
  totalCents: number;
}


interface Input {
  readonly text: string;
  /** Valid records in file order. */
  readonly records: Txn[];
  /** The deliberately late records, as their input lines. */
  readonly lateLines: string[];
  /** 1-based line numbers of the malformed lines. */
  readonly malformedLines: number[];
}

/**
 * On-time events are out of order by less than the max delay relative to the running maximum of the whole file
 * prefix, hence also of any split's prefix: whatever the parallelism and split assignment, the watermark never
 * passes them. The deliberately late events lie an hour behind, each in a window of its own, and sit well after
 * the first source batch (1024 records).
 */
function generateInput(): Input {
  const next = random(42);
  const lines: string[] = [];
  const records: Txn[] = [];
  const lateLines: string[] = [];
  const malformedLines: number[] = [];
  const lateAt = new Map([3000, 11_000, 19_000, 26_000, 29_500].map((at, k) => [at, k]));
  const malformedAt = new Map<number, string>([
    [7000, 'this is not json'],
    [15_000, JSON.stringify({ account: 'a-1', amountCents: '12', ts: T0 + 75_000 })],
    [22_000, JSON.stringify({ account: '', amountCents: 5, ts: T0 + 110_000 })],
  ]);
  const push = (record: Txn): void => {
    records.push(record);
    lines.push(JSON.stringify(record));
  };
  for (let i = 0; i < ON_TIME_EVENTS; i++) {
    const base = T0 + i * 5;
    push({
      account: `a-${Math.floor(next() * ACCOUNTS)}`,
      amountCents: 1 + Math.floor(next() * 100_000),
      ts: base - Math.floor(next() * (MAX_DELAY_MS - 100)),
    });
    const k = lateAt.get(i);
    if (k !== undefined) {
      push({ account: `a-${k}`, amountCents: 700 + k, ts: T0 - 3_600_000 - k * 3 * WINDOW_MS });
      lateLines.push(lines[lines.length - 1]!);
    }
    const bad = malformedAt.get(i);
    if (bad !== undefined) {
      lines.push(bad);
      malformedLines.push(lines.length);
    }
  }
  return { text: lines.join('\n') + '\n', records, lateLines, malformedLines };
}

const windowStartOf = (ts: number): number => Math.floor(ts / WINDOW_MS) * WINDOW_MS;
const rowKey = (account: string, windowStart: number): string => `${account}|${windowStart}`;

/**
 * The reference: a plain loop with the source's watermark (running max - max delay - 1) applied per record, in
 * file order, as a single split sees it. Every window fires at the end of input.
 */
function reference(records: readonly Txn[]): { rows: Map<string, WindowRow>; late: Txn[] } {
  const rows = new Map<string, WindowRow>();
  const late: Txn[] = [];
  let maxTs = Number.NEGATIVE_INFINITY;
  for (const t of records) {
    const watermark = maxTs - MAX_DELAY_MS - 1;
    const start = windowStartOf(t.ts);
    if (start + WINDOW_MS - 1 <= watermark) {
      late.push(t);
    } else {
      const key = rowKey(t.account, start);
      const row = rows.get(key) ?? { account: t.account, windowStart: start, windowEnd: start + WINDOW_MS, count: 0, totalCents: 0 };
      rows.set(key, { ...row, count: row.count + 1, totalCents: row.totalCents + t.amountCents });
    }
    maxTs = Math.max(maxTs, t.ts);
  }
  return { rows, late };
}

function readLines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
}

let dir: string;
let input: Input;
let inputPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-fraud-'));
  input = generateInput();
  inputPath = join(dir, 'transactions.jsonl');
  writeFileSync(inputPath, input.text);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('examples/fraud-detection.ts through the sluice CLI', () => {
  it('generates an input whose late events are exactly the deliberate ones', () => {
    const { late } = reference(input.records);
    expect(late.map((t) => JSON.stringify(t))).toEqual(input.lateLines);
  });

  it.each([1, 2, 3])('writes the reference window totals at parallelism %i', async (parallelism) => {
    const output = join(dir, `out-p${parallelism}`);
    const lateOutput = join(dir, `late-p${parallelism}`, 'late.jsonl');
    const deadLetter = join(dir, `dead-p${parallelism}.jsonl`);
    const run = await runSluice([
      'run', JOB,
      '--input', inputPath,
      '--output', output,
      '--parallelism', String(parallelism),
      '--max-delay-ms', String(MAX_DELAY_MS),
      '--window-ms', String(WINDOW_MS),
      '--late-output', lateOutput,
      '--dead-letter', deadLetter,
    ]);
    expect(run.stderr).toContain(`${input.records.length.toLocaleString('en-US')} records read`);
    expect(run.code, run.stderr).toBe(0);

    // Only committed part files: nothing hidden or in progress is left behind.
    const files = readdirSync(output);
    expect(files.filter((f) => f.startsWith('.'))).toEqual([]);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(f).toMatch(/^part-\d+-\d+\.jsonl$/);
    // The late events file and its owner record (which lets a restart of this job continue the file).
    expect(readdirSync(join(dir, `late-p${parallelism}`)).sort()).toEqual(['.late.jsonl.sluice.json', 'late.jsonl']);

    const rows = files.flatMap((f) => readLines(join(output, f))).map((l) => JSON.parse(l) as WindowRow);
    const byKey = new Map<string, WindowRow>();
    for (const row of rows) {
      expect(Object.keys(row)).toEqual(['account', 'windowStart', 'windowEnd', 'count', 'totalCents']);
      const key = rowKey(row.account, row.windowStart);
      expect(byKey.has(key), `window ${key} written twice`).toBe(false);
      byKey.set(key, row);
    }

    const lateWritten = readLines(lateOutput);
    const { rows: expected } = reference(input.records);
    if (parallelism === 1) {
      // One split: the watermark is exactly the reference's.
      expect(lateWritten).toEqual(input.lateLines);
    } else {
      // The window operator's watermark is the minimum over all source subtasks, so a deliberately late event can
      // arrive before a slow subtask has sent its first watermark. It is then on time and gets its own window,
      // which lies an hour before every other: each deliberate late event is in exactly one of the two places.
      expect(input.lateLines).toEqual(expect.arrayContaining(lateWritten));
      for (const line of input.lateLines) {
        if (lateWritten.includes(line)) continue;
        const t = JSON.parse(line) as Txn;
        const start = windowStartOf(t.ts);
        expected.set(rowKey(t.account, start), { account: t.account, windowStart: start, windowEnd: start + WINDOW_MS, count: 1, totalCents: t.amountCents });
      }
    }
    const sorted = (m: Map<string, WindowRow>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
    expect(sorted(byKey)).toEqual(sorted(expected));
    expect(run.stderr).toContain(`fraud-detection: ${lateWritten.length} late event(s) written to ${lateOutput}`);

    // Dead letters name the input file and the line number of every malformed line.
    const dead = readLines(deadLetter).map((l) => JSON.parse(l) as { file: string; line: number; raw: string; error: string });
    expect(dead.map((d) => d.line).sort((a, b) => a - b)).toEqual(input.malformedLines);
    const inputLines = input.text.split('\n');
    for (const d of dead) {
      expect(d.file).toBe(inputPath);
      expect(d.raw).toBe(inputLines[d.line - 1]);
      expect(d.error.length).toBeGreaterThan(0);
    }
  });

  it('counts late events on stderr when there is no --late-output', async () => {
    const output = join(dir, 'out-no-late');
    const run = await runSluice(['run', JOB, '--input', inputPath, '--output', output, '--max-delay-ms', String(MAX_DELAY_MS), '--window-ms', String(WINDOW_MS)]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`fraud-detection: ${input.lateLines.length} late event(s) dropped; pass --late-output FILE to keep them`);
    expect(run.stderr).toMatch(/skipped 3 malformed line\(s\)/);
    for (const f of readdirSync(output)) expect(f).toMatch(/^part-\d+-\d+\.jsonl$/);
  });

  it('exits 2 and names the missing flag when --input is missing', async () => {
    const run = await runSluice(['run', JOB, '--output', join(dir, 'unused')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error: missing required flag --input');
    expect(run.stderr).toContain(`sluice run ${JOB} --help`);
    expect(existsSync(join(dir, 'unused'))).toBe(false);
  });

  it('exits 2 with the expected form of a number flag given text', async () => {
    const run = await runSluice(['run', JOB, '--input', inputPath, '--output', join(dir, 'unused'), '--window-ms', 'abc']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error: --window-ms must be an integer >= 1, got "abc"');
  });

  it('exits 2 when the job file does not exist', async () => {
    const run = await runSluice(['run', 'examples/no-such-job.ts', '--input', inputPath]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/error: job module not found: .*examples\/no-such-job\.ts/);
  });

  it('exits 2 when the input does not exist', async () => {
    const run = await runSluice(['run', JOB, '--input', join(dir, 'missing.jsonl'), '--output', join(dir, 'unused')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`error: JSONL source: input path "${join(dir, 'missing.jsonl')}" does not exist`);
  });

  it('prints its flags with defaults for --help', async () => {
    const run = await runSluice(['run', JOB, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/--max-delay-ms <number>[\s\S]*default: 5000/);
    expect(run.stdout).toMatch(/--window-ms <number>[\s\S]*default:\s+10000/);
    expect(run.stdout).toContain('--late-output <value>');
    expect(run.stdout).toContain('--dead-letter <value>');
    expect(run.stdout).toContain('--parallelism <number>');
  });
});

describe('a failing user function through the sluice CLI', () => {
  it('exits 1 naming the operator, the subtask and the record origin', async () => {
    const lines = ['{"account":"a-1"}', '{"account":"a-2"}', '{"account":"boom"}', '{"account":"a-3"}'];
    const path = join(dir, 'throwing.jsonl');
    writeFileSync(path, lines.join('\n') + '\n');
    const offset = Buffer.byteLength(lines.slice(0, 2).join('\n') + '\n');
    const run = await runSluice(['run', 'test/fixtures/throwing-map-job.ts', '--input', path, '--output', join(dir, 'throwing-out'), '--fail-on', 'boom']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('error: job "throwing-map" failed: a user function threw');
    expect(run.stderr).toContain('operator: explode-on-account (subtask 0)');
    expect(run.stderr).toContain(`record:   split ${path}#0 offset ${offset}`);
    expect(run.stderr).toContain('cause:    refusing account boom');
  });
});
