// What changes with --parallelism, run as a user runs it: the output must not (strings with lone surrogates cross
// worker threads), and more worker threads (--threads) than the machine's processors is said once on stderr.
import { availableParallelism } from 'node:os';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines, referenceTotals, runChild, type Txn } from '../crash/crash-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-hardening-parallelism-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WINDOW_MS = 10_000;

/**
 * Accounts whose names hold lone surrogates (as a JSON "\ud800" escape reads), a real U+FFFD that one of them would
 * turn into if mangled, and plain ones.
 */
const SURROGATE_ACCOUNTS = ['\uD800x', '\uDBFFx', '\uFFFDx', 'a\uDC00', '\uD83D\uDE00 pair', 'plain-1', 'plain-2'];

/** Transactions cycling through `accounts`, in event-time order so that nothing is late at any parallelism. */
function writeInput(path: string, accounts: readonly string[], count = 3000): Txn[] {
  const records: Txn[] = [];
  for (let i = 0; i < count; i++) records.push({ account: accounts[i % accounts.length]!, amountCents: 1 + ((i * 7919) % 10_000), ts: 1_700_000_000_000 + i * 20 });
  writeFileSync(path, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return records;
}

describe('sluice run at every parallelism', () => {
  it('writes byte-identical fraud-detection totals at parallelism 1 and 2 for accounts with lone surrogates', async () => {
    const input = join(dir, 'surrogates.jsonl');
    const reference = referenceTotals(writeInput(input, SURROGATE_ACCOUNTS), WINDOW_MS);
    const run = (p: number) =>
      runChild(['run', 'examples/fraud-detection.ts', '--input', input, '--output', join(dir, `out-p${p}`), '--parallelism', String(p), '--window-ms', String(WINDOW_MS)]);
    const [p1, p2] = await Promise.all([run(1), run(2)]);
    expect(p1.code, p1.stderr).toBe(0);
    expect(p2.code, p2.stderr).toBe(0);
    const lines1 = committedLines(join(dir, 'out-p1')).sort();
    const lines2 = committedLines(join(dir, 'out-p2')).sort();
    expect(lines2.join('\n')).toBe(lines1.join('\n'));
    expect(lines1).toEqual(reference.lines);
    // The names come out as they went in: JSON escapes, not replacement characters.
    expect(lines1.some((l) => l.includes('"account":"\\ud800x"'))).toBe(true);
  });

  it('restores window state keyed by lone-surrogate accounts at another parallelism, exactly (SIGKILL after a checkpoint)', async () => {
    const input = join(dir, 'surrogates-large.jsonl');
    // Enough records that the first checkpoint, 50 ms in, holds open windows of every account.
    const reference = referenceTotals(writeInput(input, SURROGATE_ACCOUNTS, 30_000), WINDOW_MS);
    const output = join(dir, 'out-restored');
    const args = (p: number) => [
      'run', 'examples/fraud-detection.ts', '--input', input, '--output', output, '--parallelism', String(p),
      '--window-ms', String(WINDOW_MS), '--checkpoint-dir', join(dir, 'ck-restored'), '--checkpoint-interval-ms', '50',
    ];
    const crashed = await runChild(args(2), { env: { SLUICE_CRASH_AT: 'after-metadata-commit:1' } });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    const rerun = await runChild(args(1));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/restored from checkpoint 1/);
    expect(committedLines(output).sort()).toEqual(reference.lines);
  });

  it.skipIf(availableParallelism() > 8)('warns once when --threads is above the processors the machine offers, and still runs', async () => {
    const input = join(dir, 'small.jsonl');
    const reference = referenceTotals(writeInput(input, ['a-1', 'a-2', 'a-3']), WINDOW_MS);
    const parallelism = availableParallelism() + 1;
    const run = await runChild([
      'run', 'examples/fraud-detection.ts', '--input', input, '--output', join(dir, 'out-over'), '--parallelism', String(parallelism), '--threads', String(parallelism),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const warnings = run.stderr.split('\n').filter((l) => l.startsWith('warning:'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`--threads ${parallelism} is more than the ${availableParallelism()} processor`);
    expect(committedLines(join(dir, 'out-over')).sort()).toEqual(reference.lines);
  });

  it('does not warn when only --parallelism is above the processors: its subtasks share the threads', async () => {
    const input = join(dir, 'small-shared.jsonl');
    const reference = referenceTotals(writeInput(input, ['a-1', 'a-2', 'a-3']), WINDOW_MS);
    const run = await runChild(['run', 'examples/fraud-detection.ts', '--input', input, '--output', join(dir, 'out-shared'), '--parallelism', String(availableParallelism() + 1)]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('warning:');
    expect(committedLines(join(dir, 'out-shared')).sort()).toEqual(reference.lines);
  });
});
