// Shared pieces of the crash tests: a seeded PRNG, the transaction input with its reference window totals, the
// sluice child process with extra environment, and the check that an output directory holds exactly the reference.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { REPO_ROOT, type SluiceRun } from '../integration/sluice-process.ts';
import { seededRandom } from '../harness/seeded-random.ts';

const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

export const random = seededRandom;

export interface Txn {
  readonly account: string;
  readonly amountCents: number;
  readonly ts: number;
}

export interface InputSpec {
  readonly records: number;
  readonly accounts: number;
  readonly t0: number;
  /** Event-time step between consecutive records before jitter. */
  readonly stepMs: number;
  readonly maxDelayMs: number;
  readonly windowMs: number;
  /** 0-based record indexes after which a malformed line is inserted. */
  readonly malformedAfter: readonly number[];
}

export interface GeneratedInput {
  readonly text: string;
  readonly records: readonly Txn[];
  readonly malformedLines: number;
}

/**
 * Out of order by less than the max delay relative to the running maximum of the whole file prefix, hence of any
 * split's prefix too: whatever the parallelism and split boundaries, the watermark never passes an event, so there
 * are no late events and the window totals are the same at every parallelism.
 */
export function generateInput(spec: InputSpec, seed: number): GeneratedInput {
  const next = random(seed);
  const lines: string[] = [];
  const records: Txn[] = [];
  const malformed = new Set(spec.malformedAfter);
  const garbage = ['{"account":"a-1","amountCents":', JSON.stringify({ account: 'a-2', amountCents: 'lots', ts: spec.t0 })];
  let m = 0;
  for (let i = 0; i < spec.records; i++) {
    const t: Txn = {
      account: `a-${Math.floor(next() * spec.accounts)}`,
      amountCents: 1 + Math.floor(next() * 100_000),
      ts: spec.t0 + i * spec.stepMs - Math.floor(next() * (spec.maxDelayMs - 100)),
    };
    records.push(t);
    lines.push(JSON.stringify(t));
    if (malformed.has(i)) lines.push(garbage[m++ % garbage.length]!);
  }
  return { text: lines.join('\n') + '\n', records, malformedLines: malformed.size };
}

/** Events the source's watermark (running max - max delay - 1) would make late, read in file order: none expected. */
export function lateEvents(records: readonly Txn[], spec: InputSpec): number {
  let late = 0;
  let maxTs = Number.NEGATIVE_INFINITY;
  for (const t of records) {
    const windowEnd = Math.floor(t.ts / spec.windowMs) * spec.windowMs + spec.windowMs;
    if (windowEnd - 1 <= maxTs - spec.maxDelayMs - 1) late++;
    maxTs = Math.max(maxTs, t.ts);
  }
  return late;
}

export interface Reference {
  /** Output lines as the job formats them, sorted. */
  readonly lines: readonly string[];
  readonly records: number;
  readonly totalCents: number;
}

/** The expected rows, computed with a plain loop: one per (account, window), with count and total. */
export function referenceTotals(records: readonly Txn[], windowMs: number): Reference {
  const rows = new Map<string, { account: string; windowStart: number; windowEnd: number; count: number; totalCents: number }>();
  let totalCents = 0;
  for (const t of records) {
    const windowStart = Math.floor(t.ts / windowMs) * windowMs;
    const key = `${t.account}|${windowStart}`;
    let row = rows.get(key);
    if (row === undefined) {
      row = { account: t.account, windowStart, windowEnd: windowStart + windowMs, count: 0, totalCents: 0 };
      rows.set(key, row);
    }
    row.count++;
    row.totalCents += t.amountCents;
    totalCents += t.amountCents;
  }
  return { lines: [...rows.values()].map((r) => JSON.stringify(r)).sort(), records: records.length, totalCents };
}

export interface ChildRun extends SluiceRun {
  /** Whether the test killed it (as opposed to a SIGKILL it sent itself at a crash point). */
  readonly killedByTest: boolean;
}

export interface StartedChild {
  readonly child: ChildProcess;
  readonly done: Promise<ChildRun>;
  /** SIGKILLs the process unless it already ended. */
  kill(): void;
}

/** Starts `node bin/sluice.js <args>` in the repository root, with `env` added to this process's environment. */
export function startChild(args: readonly string[], env: Record<string, string> = {}): StartedChild {
  const child = spawn(process.execPath, [SLUICE, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  let killedByTest = false;
  let exited = false;
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  child.once('exit', () => (exited = true));
  const done = new Promise<ChildRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr, killedByTest }));
  });
  return {
    child,
    done,
    kill() {
      if (exited) return;
      killedByTest = true;
      child.kill('SIGKILL');
    },
  };
}

/** Runs the child to its end, SIGKILLing it after `killAfterMs` if it is still running then. */
export async function runChild(args: readonly string[], options: { env?: Record<string, string>; killAfterMs?: number } = {}): Promise<ChildRun> {
  const started = startChild(args, options.env);
  const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => started.kill(), options.killAfterMs);
  try {
    return await started.done;
  } finally {
    clearTimeout(timer);
  }
}

/** Lines of every committed part file (part-<subtask>-<n>.jsonl) in `dir`. */
export function committedLines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^part-\d+-\d+\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter((l) => l.length > 0));
}

/** Compares output lines with the reference: how many reference rows are missing, doubled, or wrong. */
export function diffLines(actual: readonly string[], reference: Reference): { lost: number; duplicated: number; unexpected: string[] } {
  const expected = new Set(reference.lines);
  const seen = new Map<string, number>();
  for (const line of actual) seen.set(line, (seen.get(line) ?? 0) + 1);
  let duplicated = 0;
  const unexpected: string[] = [];
  for (const [line, n] of seen) {
    if (!expected.has(line)) unexpected.push(line);
    else duplicated += n - 1;
  }
  const lost = reference.lines.filter((l) => !seen.has(l)).length;
  return { lost, duplicated, unexpected: unexpected.slice(0, 5) };
}

/**
 * The directory of a successful run holds only committed part files, and their lines are the reference exactly:
 * nothing lost, nothing twice, every count and total right.
 */
export function expectExactOutput(dir: string, reference: Reference, context: string): void {
  const names = readdirSync(dir);
  expect(names.filter((n) => n.startsWith('.')), `${context}: hidden files left in ${dir}`).toEqual([]);
  for (const name of names) expect(name, context).toMatch(/^part-\d+-\d+\.jsonl$/);
  const lines = committedLines(dir);
  expect(diffLines(lines, reference), context).toEqual({ lost: 0, duplicated: 0, unexpected: [] });
  const rows = lines.map((l) => JSON.parse(l) as { count: number; totalCents: number });
  expect(rows.reduce((s, r) => s + r.count, 0), context).toBe(reference.records);
  expect(rows.reduce((s, r) => s + r.totalCents, 0), context).toBe(reference.totalCents);
  expect([...lines].sort(), context).toEqual(reference.lines);
}

/** Ids of the complete checkpoints (those with `_metadata`) in a checkpoint folder, ascending. */
export function completeCheckpoints(checkpointDir: string): number[] {
  if (!existsSync(checkpointDir)) return [];
  return readdirSync(checkpointDir)
    .filter((name) => /^chk-\d+$/.test(name) && existsSync(join(checkpointDir, name, '_metadata')))
    .map((name) => Number(name.slice(4)))
    .sort((a, b) => a - b);
}
