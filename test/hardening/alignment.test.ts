// Watermark alignment as a user meets it: `sluice run` at parallelism 2 on a time-ordered file, where the second
// range split starts far ahead in event time. Aligned (the default), it waits for the first instead of piling up
// windows in state; the output is the one of parallelism 1.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_ALLOWED_DRIFT_MS } from '../../lib/index.ts';
import { runSluice } from '../integration/sluice-process.ts';

const WINDOW_MS = 10_000;
const ACCOUNTS = 8;
/**
 * One transaction every 10 ms: 600 s of event time, 60 windows per account. A batch of 1024 records (the default
 * batch size) then spans about one window.
 */
const LINES = 60_000;
const STEP_MS = 10;

let dir: string;

/** A time-ordered input of `lines` transactions. */
function writeInput(name: string, lines: number): string {
  const path = join(dir, name);
  const rows = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ account: `a-${i % ACCOUNTS}`, amountCents: (i * 37) % 1000, ts: 1_700_000_000_000 + i * STEP_MS }),
  );
  writeFileSync(path, `${rows.join('\n')}\n`);
  return path;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-hardening-align-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every output row of a run, sorted. */
function rows(output: string): string[] {
  return readdirSync(output)
    .filter((n) => n.endsWith('.jsonl') && !n.startsWith('.'))
    .flatMap((n) => readFileSync(join(output, n), 'utf8').split('\n').filter((l) => l.length > 0))
    .sort();
}

async function run(job: string, input: string, name: string, parallelism: number, extra: string[] = []): Promise<string> {
  const output = join(dir, `${name}-out`);
  const result = await runSluice([
    'run', job, '--input', input, '--output', output, '--parallelism', String(parallelism),
    '--checkpoint-dir', join(dir, `${name}-chk`), '--checkpoint-interval-ms', '100', ...extra,
  ]);
  expect(result.stderr).not.toMatch(/at .*\.ts:\d+/); // no stack trace
  expect(result.code, result.stderr).toBe(0);
  return output;
}

describe('watermark alignment through the sluice CLI', () => {
  const FRAUD = 'examples/fraud-detection.ts';
  const OPEN_WINDOWS = 'test/fixtures/jobs/open-windows.ts';
  let outputs: Record<'fraudP1' | 'fraudP2' | 'aligned' | 'unaligned', string>;

  // The four runs go side by side: each is mostly start-up.
  beforeAll(async () => {
    // 200 s of event time: the second split starts 100 s ahead, beyond the default drift.
    const fraudInput = writeInput('fraud.jsonl', LINES / 3);
    const openInput = writeInput('open.jsonl', LINES);
    const [fraudP1, fraudP2, aligned, unaligned] = await Promise.all([
      run(FRAUD, fraudInput, 'fraud-p1', 1),
      run(FRAUD, fraudInput, 'fraud-p2', 2),
      run(OPEN_WINDOWS, openInput, 'open-aligned', 2),
      run(OPEN_WINDOWS, openInput, 'open-unaligned', 2, ['--unaligned']),
    ]);
    outputs = { fraudP1, fraudP2, aligned, unaligned };
  }, 120_000);

  it('fraud-detection at parallelism 2 on a time-ordered file with checkpoints writes what parallelism 1 writes', () => {
    const expected = rows(outputs.fraudP1);
    expect(expected).toHaveLength(ACCOUNTS * (((LINES / 3) * STEP_MS) / WINDOW_MS));
    expect(rows(outputs.fraudP2)).toEqual(expected);
  });

  it('holds at most about drift / window windows per account in state, where unaligned they pile up', () => {
    const maxOpen = (output: string) => Math.max(...rows(output).map((l) => (JSON.parse(l) as { openAtFire: number }).openAtFire));
    const withoutOpen = (output: string) =>
      rows(output)
        .map((l) => {
          const { openAtFire: _, ...rest } = JSON.parse(l) as Record<string, unknown>;
          return JSON.stringify(rest);
        })
        .sort();
    expect(withoutOpen(outputs.aligned)).toEqual(withoutOpen(outputs.unaligned));
    // Drift / window windows per account, plus the open window, one batch and records in flight.
    const bound = ACCOUNTS * (DEFAULT_MAX_ALLOWED_DRIFT_MS / WINDOW_MS + 4);
    expect(maxOpen(outputs.aligned)).toBeLessThanOrEqual(bound);
    // The second split starts 300 s (30 windows) ahead: unaligned, its windows wait in state for the first.
    expect(maxOpen(outputs.unaligned)).toBeGreaterThan(bound);
  });
});
