import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { OutputRow } from '../fixtures/jobs/sequenced-window-totals.ts';
import { restUrl, runSluice, startSluice, type SluiceRun, waitFor } from './sluice-process.ts';
import { seededRandom as random } from '../harness/seeded-random.ts';

/**
 * A savepoint taken on one state backend and parallelism, restored on another, through `sluice run` / `sluice stop`
 * as child processes. The job (test/fixtures/jobs/sequenced-window-totals.ts) numbers each key's events with a
 * value state, sums those numbers in tumbling event-time windows, and numbers per-key event-time tick timers with a
 * second value state. The savepoint is taken once the first half of a followed input file is read and every window
 * and tick it can close has been committed, so at that moment every key has value state, open windows and pending
 * timers of both operators. A lost or duplicated state entry shifts the sequence numbers; a lost timer drops a
 * row (and shifts later tick numbers), a duplicated one adds a row.
 */

const JOB = 'test/fixtures/jobs/sequenced-window-totals.ts';
const KEYS = 24;
const EVENTS = 12_000;
/** The first run reads this many events; the savepoint is taken after them. */
const FIRST_PART = 6_000;
const MAX_DELAY_MS = 500;
const WINDOW_MS = 1000;
const TICK_MS = 700;
const T0 = 1_700_000_000_000;

interface InputEvent {
  k: string;
  ts: number;
  v: number;
}


/** Out of order by less than the max delay relative to the running maximum, so no event is ever late. */
function generateEvents(): InputEvent[] {
  const next = random(42);
  const events: InputEvent[] = [];
  for (let i = 0; i < EVENTS; i++) {
    events.push({ k: `k${Math.floor(next() * KEYS)}`, ts: T0 + i * 5 - Math.floor(next() * (MAX_DELAY_MS - 50)), v: Math.floor(next() * 1000) });
  }
  return events;
}

/** One JSON line per row, its fields in a fixed order, so that rows compare as strings. */
const canonical = (row: object): string => JSON.stringify(row, Object.keys(row).sort());

/** The event time at which a row is emitted: when the watermark reaches it. */
const rowTime = (row: OutputRow): number => (row.kind === 'window' ? row.start + WINDOW_MS - 1 : row.at);

/** What the job must write for `events`, computed in one pass in input order. */
function expectedRows(events: readonly InputEvent[]): OutputRow[] {
  const seen = new Map<string, number>();
  const windows = new Map<string, { k: string; start: number; count: number; seqSum: number; vSum: number }>();
  const ticks = new Map<string, Set<number>>();
  for (const e of events) {
    const seq = (seen.get(e.k) ?? 0) + 1;
    seen.set(e.k, seq);
    const start = Math.floor(e.ts / WINDOW_MS) * WINDOW_MS;
    const w = windows.get(`${e.k}@${start}`) ?? { k: e.k, start, count: 0, seqSum: 0, vSum: 0 };
    w.count++;
    w.seqSum += seq;
    w.vSum += e.v;
    windows.set(`${e.k}@${start}`, w);
    const at = Math.floor(e.ts / TICK_MS) * TICK_MS + TICK_MS - 1;
    ticks.set(e.k, (ticks.get(e.k) ?? new Set<number>()).add(at));
  }
  const rows: OutputRow[] = [...windows.values()].map((w) => ({ kind: 'window', ...w }));
  for (const [k, times] of ticks) {
    [...times].sort((a, b) => a - b).forEach((at, i) => rows.push({ kind: 'tick', k, at, n: i + 1 }));
  }
  return rows;
}

/** Every line of the committed part files, canonical and sorted (duplicates kept, so that they show). */
function committedRows(output: string): string[] {
  let files: string[];
  try {
    files = readdirSync(output).filter((f) => /^part-\d+-\d+\.jsonl$/.test(f));
  } catch {
    return [];
  }
  return files
    .flatMap((f) => readFileSync(join(output, f), 'utf8').split('\n'))
    .filter((l) => l.length > 0)
    .map((l) => canonical(JSON.parse(l) as object))
    .sort();
}

async function recordsRead(url: string): Promise<number> {
  const { jobs } = (await (await fetch(`${url}/jobs`)).json()) as { jobs: { id: string }[] };
  const details = (await (await fetch(`${url}/jobs/${jobs[0]!.id}`)).json()) as { recordsRead: number };
  return details.recordsRead;
}

const toLines = (events: readonly InputEvent[]): string => events.map((e) => `${JSON.stringify(e)}\n`).join('');

const events = generateEvents();
const expected = expectedRows(events);
const expectedAll = expected.map(canonical).sort();
/** The watermark once the first part is read: the rows at or before it are out before the savepoint, the others after. */
const firstWatermark = Math.max(...events.slice(0, FIRST_PART).map((e) => e.ts)) - MAX_DELAY_MS - 1;
const expectedBefore = expected.filter((r) => rowTime(r) <= firstWatermark).map(canonical).sort();
const pendingAtSavepoint = expected.filter((r) => rowTime(r) > firstWatermark);

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Deployment {
  readonly backend: 'memory' | 'rocksdb';
  readonly parallelism: number;
}

function deploymentArgs(dir: string, name: string, d: Deployment): string[] {
  return [
    '--parallelism', String(d.parallelism),
    '--state-backend', d.backend,
    ...(d.backend === 'rocksdb' ? ['--state-dir', join(dir, `state-${name}`)] : []),
    '--checkpoint-dir', join(dir, `ck-${name}`),
    '--checkpoint-interval-ms', '100',
    '--restart-strategy', 'none',
  ];
}

/** The rows of `want` that `have` lacks, counting duplicates: how many, and the first few. */
function difference(have: readonly string[], want: readonly string[]): { count: number; first: string[] } {
  const left = new Map<string, number>();
  for (const r of have) left.set(r, (left.get(r) ?? 0) + 1);
  const lacking: string[] = [];
  for (const r of want) {
    const n = left.get(r) ?? 0;
    if (n > 0) left.set(r, n - 1);
    else lacking.push(r);
  }
  return { count: lacking.length, first: lacking.slice(0, 5) };
}

const describeRun = (run: SluiceRun): string => `exit ${run.code}, signal ${run.signal}\n${run.stderr}`;

describe('a savepoint with keyed state and pending event-time timers restores across state backends and parallelism', () => {
  it('has rows on both sides of the savepoint: state and timers of every key are pending when it is taken', () => {
    expect(expectedBefore.length).toBeGreaterThan(0);
    const keysPending = (kind: OutputRow['kind']) => new Set(pendingAtSavepoint.filter((r) => r.kind === kind).map((r) => r.k)).size;
    expect(keysPending('window')).toBe(KEYS);
    expect(keysPending('tick')).toBe(KEYS);
  });

  it.each<[string, Deployment, Deployment]>([
    ['memory p=2 -> rocksdb p=3', { backend: 'memory', parallelism: 2 }, { backend: 'rocksdb', parallelism: 3 }],
    ['rocksdb p=3 -> memory p=1', { backend: 'rocksdb', parallelism: 3 }, { backend: 'memory', parallelism: 1 }],
    ['rocksdb p=2 -> rocksdb p=1', { backend: 'rocksdb', parallelism: 2 }, { backend: 'rocksdb', parallelism: 1 }],
    ['memory p=2 -> memory p=3 (control)', { backend: 'memory', parallelism: 2 }, { backend: 'memory', parallelism: 3 }],
  ])('%s: the restored run ends with exactly the output of an uninterrupted run', async (_name, before, after) => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-savepoint-xbackend-'));
    dirs.push(dir);
    const input = join(dir, 'events.jsonl');
    const output = join(dir, 'out');
    writeFileSync(input, toLines(events.slice(0, FIRST_PART)));
    const jobArgs = ['--input', input, '--output', output, '--max-delay-ms', String(MAX_DELAY_MS), '--window-ms', String(WINDOW_MS), '--tick-ms', String(TICK_MS)];

    // First run: follows the file until stopped.
    const first = startSluice(['run', JOB, ...jobArgs, ...deploymentArgs(dir, 'before', before)]);
    const exited = first.done.then((run) => {
      throw new Error(`the first run ended before it was stopped: ${describeRun(run)}`);
    });
    exited.catch(() => {});
    let savepoint: string;
    try {
      const checkpointDir = join(dir, 'ck-before');
      const url = await Promise.race([waitFor('rest.json', () => restUrl(checkpointDir)), exited]);
      // Everything the first part can close is committed and nothing else is read: the savepoint's content is fixed.
      await Promise.race([waitFor('the first part read', async () => ((await recordsRead(url)) === FIRST_PART ? true : undefined)), exited]);
      await Promise.race([waitFor('the rows before the savepoint', () => (committedRows(output).length >= expectedBefore.length ? true : undefined)), exited]);
      expect(committedRows(output)).toEqual(expectedBefore);

      const stop = await runSluice(['stop', '--checkpoint-dir', checkpointDir]);
      expect(stop.code, stop.stderr).toBe(0);
      savepoint = stop.stdout.trim();
      const stopped = await first.done;
      expect(stopped.code, describeRun(stopped)).toBe(0);
      expect(stopped.stderr).toContain(`stopped with savepoint ${savepoint}`);
      expect(readdirSync(savepoint)).toContain('_metadata');
    } finally {
      // A failed wait leaves the following job running: end it (this test started it).
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }
    // No window or tick fired at the stop: all of them are still pending in the savepoint.
    expect(committedRows(output)).toEqual(expectedBefore);

    // Second run: the rest of the input, then the file stays idle and the input ends (firing every pending timer).
    appendFileSync(input, toLines(events.slice(FIRST_PART)));
    const restored = await runSluice(['run', JOB, ...jobArgs, '--idle-timeout-ms', '300', ...deploymentArgs(dir, 'after', after), '--restore', savepoint]);
    expect(restored.code, describeRun(restored)).toBe(0);
    expect(restored.stderr).toContain(`restored from savepoint ${savepoint}`);
    expect(restored.stderr).toContain(`finished: ${(EVENTS - FIRST_PART).toLocaleString('en-US')} records read`);
    const rows = committedRows(output);
    // The differences first, small enough to read when a restore loses or duplicates rows.
    expect(difference(rows, expectedAll), 'missing rows').toEqual({ count: 0, first: [] });
    expect(difference(expectedAll, rows), 'extra (or duplicated) rows').toEqual({ count: 0, first: [] });
    expect(rows).toEqual(expectedAll);
  });
});
