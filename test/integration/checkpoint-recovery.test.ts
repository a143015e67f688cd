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
  systemClock,
  type Transaction,
} from '../../lib/index.ts';
import type { TwoPhaseCommitSink } from '../../lib/connectors/sink.ts';

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

/** A transactional sink for tests: each prepared transaction is committed at most once, by id. */
function committingSink(committed: Map<string, Row[]>): TwoPhaseCommitSink<Row, { id: string; rows: Row[] }> {
  return {
    name: 'committing',
    twoPhaseCommit: true,
    createWriter(ctx) {
      let open: Row[] = [];
      return {
        write(batch) {
          open.push(...batch.values);
        },
        prepareCommit(checkpointId) {
          const txn = { id: `${ctx.attempt}/${ctx.subtask}/${checkpointId}`, rows: open };
          open = [];
          return txn.rows.length > 0 ? [txn] : [];
        },
      };
    },
    createCommitter: () => ({
      commit(committables) {
        for (const c of committables) if (!committed.has(c.id)) committed.set(c.id, c.rows);
      },
    }),
    cleanUpDangling() {},
  };
}

async function reference(events: number): Promise<string[]> {
  const source = generatorSource({ count: events, keyCount: 20, seed: 5, startTime: 0, eventIntervalMs: 1 });
  const reader = await source.createReader(await source.createSplits({ parallelism: 1 }), {
    subtask: 0,
    parallelism: 1,
    clock: systemClock,
    signal: new AbortController().signal,
  });
  const acc = new Map<string, Row>();
  for (let r = await reader.poll(1000); r.kind !== 'end'; r = await reader.poll(1000)) {
    if (r.kind !== 'batch') continue;
    for (const t of r.batch.values) {
      const windowStart = t.ts - (t.ts % 500);
      const row = acc.get(`${t.account}@${windowStart}`) ?? { account: t.account, windowStart, count: 0, total: 0 };
      row.count++;
      row.total += t.amountCents;
      acc.set(`${t.account}@${windowStart}`, row);
    }
  }
  return [...acc.values()].map((r) => JSON.stringify(r)).sort();
}

function buildJob(parallelism: number, events: number, committed: Map<string, Row[]>, failAt: { index: number; armed: boolean }) {
  const env = new StreamEnvironment({ parallelism, batchSize: 100 });
  env
    .fromSource(
      generatorSource({ count: events, keyCount: 20, seed: 5, startTime: 0, eventIntervalMs: 1, ratePerSecond: 40_000 }),
      WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(0),
    )
    .map((t) => {
      if (failAt.armed && t.ts === failAt.index) {
        failAt.armed = false;
        throw new Error('injected failure');
      }
      return t;
    })
    .keyBy((t) => t.account)
    .window(TumblingEventTimeWindows.of(500))
    .aggregate(
      {
        createAccumulator: () => ({ count: 0, total: 0 }),
        add: (t: Transaction, a: { count: number; total: number }) => ({ count: a.count + 1, total: a.total + t.amountCents }),
        getResult: (a) => a,
        merge: (a, b) => ({ count: a.count + b.count, total: a.total + b.total }),
      },
      (a, account, w): Row => ({ account, windowStart: w.start, count: a.count, total: a.total }),
    )
    .sinkTo(committingSink(committed));
  return env;
}

describe('checkpoints and recovery (in-thread)', () => {
  it.each([1, 2])('a failure mid-run restarts from the latest checkpoint with exact, non-duplicated output (parallelism %i)', async (parallelism) => {
    const events = 20_000;
    const committed = new Map<string, Row[]>();
    const failAt = { index: 12_000, armed: true };
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
    const failAt = { index: 7_000, armed: true };
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

  it('skips a corrupt latest checkpoint with a warning and restores the previous complete one', async () => {
    const dir = tempDir();
    const events = 10_000;
    const committed = new Map<string, Row[]>();
    const failAt = { index: 8_000, armed: true };
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
    const logs: string[] = [];
    await runInThisThread(buildJob(1, events, committed, failAt), { checkpointing: { dir, intervalMs: 20 }, log: (l) => logs.push(l) });
    const newestId = Number(newest.slice(4));
    expect(logs.some((l) => l.startsWith(`warning: skipping checkpoint ${newestId}`))).toBe(true);
    const restored = logs.map((l) => /restored from checkpoint (\d+)/.exec(l)).find((m) => m !== null);
    expect(Number(restored![1])).toBeLessThan(newestId);
    // Nothing is lost. What the skipped checkpoint had already committed is produced again by the replay from the
    // older one: falling back past a committed checkpoint cannot be exactly-once (as in Flink).
    const distinct = [...new Set([...committed.values()].flat().map((r) => JSON.stringify(r)))].sort();
    expect(distinct).toEqual(await reference(events));
  });
});
