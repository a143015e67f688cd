import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  StreamEnvironment,
  generatorSource,
  runInThisThread,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type Transaction,
} from '../../lib/index.ts';
import { countAndSum } from '../../bench/count-and-sum.ts';
import { committingSink } from '../harness/committing-sink.ts';
import { failOnceAt, generatedTransactions, windowTotalLines } from '../harness/generated-transactions.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sluice-ckpt-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Row {
  account: string;
  windowStart: number;
  count: number;
  total: number;
}

async function reference(events: number): Promise<string[]> {
  return windowTotalLines(await generatedTransactions({ count: events, keyCount: 20, seed: 5, startTime: 0, eventIntervalMs: 1 }), 500);
}

function buildJob(parallelism: number, events: number, committed: Map<string, Row[]>, failAt: { ts: number; armed: boolean }) {
  const env = new StreamEnvironment({ parallelism, batchSize: 100 });
  env
    .fromSource(
      generatorSource({ count: events, keyCount: 20, seed: 5, startTime: 0, eventIntervalMs: 1, ratePerSecond: 40_000 }),
      WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(0),
    )
    .map(failOnceAt(failAt))
    .keyBy((t) => t.account)
    .window(TumblingEventTimeWindows.of(500))
    .aggregate(
      countAndSum,
      (a, account, w): Row => ({ account, windowStart: w.start, count: a.count, total: a.total }),
    )
    .sinkTo(committingSink(committed));
  return env;
}

describe('checkpoints and recovery (in-thread)', () => {
  it.each([1, 2])('a failure mid-run restarts from the latest checkpoint with exact, non-duplicated output (parallelism %i)', async (parallelism) => {
    const events = 20_000;
    const committed = new Map<string, Row[]>();
    const failAt = { ts: 12_000, armed: true };
    const logs: string[] = [];
    await runInThisThread(buildJob(parallelism, events, committed, failAt), {
      checkpointing: { dir: tempDir(), intervalMs: 40 },
      restart: { kind: 'fixed-delay', attempts: 2, delayMs: 10 },
      log: (l) => logs.push(l),
    });
    expect(failAt.armed).toBe(false);
    expect(logs.some((l) => /restored from checkpoint \d+/.test(l))).toBe(true);
    const rows = [...committed.values()].flat().map((r) => JSON.stringify(r)).sort();
    expect(rows).toEqual(await reference(events));
  });

  it('resumes across runs from the same checkpoint folder', async () => {
    const dir = tempDir();
    const events = 10_000;
    const committed = new Map<string, Row[]>();
    const failAt = { ts: 7_000, armed: true };
    // First run: no restarts, so the failure ends the run.
    await expect(
      runInThisThread(buildJob(2, events, committed, failAt), {
        checkpointing: { dir, intervalMs: 30 },
        restart: { kind: 'none' },
        log: () => {},
      }),
    ).rejects.toThrow(/injected failure/);
    const logs: string[] = [];
    await runInThisThread(buildJob(2, events, committed, failAt), { checkpointing: { dir, intervalMs: 30 }, log: (l) => logs.push(l) });
    expect(logs.some((l) => /restored from checkpoint \d+/.test(l))).toBe(true);
    expect([...committed.values()].flat().map((r) => JSON.stringify(r)).sort()).toEqual(await reference(events));
  });

  it('refuses to fall back past a corrupt latest checkpoint; with allowReplay restores the previous complete one', async () => {
    const dir = tempDir();
    const events = 10_000;
    const committed = new Map<string, Row[]>();
    const failAt = { ts: 8_000, armed: true };
    await expect(
      runInThisThread(buildJob(1, events, committed, failAt), {
        checkpointing: { dir, intervalMs: 20 },
        restart: { kind: 'none' },
        log: () => {},
      }),
    ).rejects.toThrow(/injected failure/);
    // Complete checkpoints only: the failed run may have left one still being written.
    const checkpoints = readdirSync(dir)
      .filter((d) => d.startsWith('chk-') && existsSync(join(dir, d, '_metadata')))
      .sort();
    expect(checkpoints.length).toBeGreaterThanOrEqual(2);
    const newest = checkpoints[checkpoints.length - 1]!;
    const stateFile = readdirSync(join(dir, newest)).find((f) => f.endsWith('.state'))!;
    appendFileSync(join(dir, newest, stateFile), 'garbage');
    const newestId = Number(newest.slice(4));
    const before = [...committed.values()].flat().length;
    await expect(
      runInThisThread(buildJob(1, events, committed, failAt), { checkpointing: { dir, intervalMs: 20 }, log: () => {} }),
    ).rejects.toThrow(new RegExp(`checkpoint ${newestId} in .* is corrupt:.*would replay the output committed by checkpoint ${newestId}.*--allow-replay`, 's'));
    expect([...committed.values()].flat().length).toBe(before);
    const logs: string[] = [];
    await runInThisThread(buildJob(1, events, committed, failAt), {
      checkpointing: { dir, intervalMs: 20, allowReplay: true },
      log: (l) => logs.push(l),
    });
    expect(logs.some((l) => l.startsWith(`warning: --allow-replay: checkpoint ${newestId} corrupt`))).toBe(true);
    const restored = logs.map((l) => /restored from checkpoint (\d+)/.exec(l)).find((m) => m !== null);
    expect(Number(restored![1])).toBeLessThan(newestId);
    // Nothing is lost. What the skipped checkpoint had already committed is produced again by the replay from the
    // older one: falling back past a committed checkpoint cannot be exactly-once, hence the explicit allowReplay.
    const distinct = [...new Set([...committed.values()].flat().map((r) => JSON.stringify(r)))].sort();
    expect(distinct).toEqual(await reference(events));
  });
});
