import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StreamEnvironment, generatorSource, runInThisThread, WatermarkStrategy, type Transaction } from '../../../lib/index.ts';
import type { FencingToken } from '../../../lib/core/index.ts';
import type { TwoPhaseCommitSink } from '../../../lib/connectors/sink.ts';
import { failOnceAt } from '../../harness/generated-transactions.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sluice-fencing-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A sink that records the fencing token each attempt opens it with. */
function tokenRecordingSink(seen: FencingToken[]): TwoPhaseCommitSink<Transaction, null> {
  return {
    name: 'tokens',
    twoPhaseCommit: true,
    createWriter(ctx) {
      seen.push(ctx.fencing!);
      return { write() {}, prepareCommit: () => [] };
    },
    createCommitter: () => ({ commit() {} }),
    cleanUpDangling() {},
  };
}

function job(seen: FencingToken[], failAt: { ts: number; armed: boolean }): StreamEnvironment {
  const env = new StreamEnvironment({ parallelism: 1, batchSize: 100 });
  env
    .fromSource(
      generatorSource({ count: 6_000, keyCount: 5, seed: 1, startTime: 0, eventIntervalMs: 1, ratePerSecond: 40_000 }),
      WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(0),
    )
    .map(failOnceAt(failAt))
    .sinkTo(tokenRecordingSink(seen));
  return env;
}

describe('fencing tokens of a job run', () => {
  it('a restart takes the next epoch and attempt, and a later run of the same job starts above every earlier epoch', async () => {
    const dir = tempDir();
    const first: FencingToken[] = [];
    await runInThisThread(job(first, { ts: 4_000, armed: true }), {
      checkpointing: { dir, intervalMs: 30 },
      restart: { kind: 'fixed-delay', attempts: 2, delayMs: 10 },
      log: () => {},
    });
    expect(first).toHaveLength(2);
    expect(first[0]!.attempt).toBe(0);
    expect(first[1]).toEqual({ attempt: 1, epoch: first[0]!.epoch + 1 });

    const second: FencingToken[] = [];
    await runInThisThread(job(second, { ts: 0, armed: false }), { checkpointing: { dir, intervalMs: 30 }, log: () => {} });
    expect(second).toHaveLength(1);
    expect(second[0]!.attempt).toBe(0);
    expect(second[0]!.epoch).toBeGreaterThan(first[1]!.epoch);
  });

  it('gives a job without checkpoints a token as well', async () => {
    const seen: FencingToken[] = [];
    await runInThisThread(job(seen, { ts: 0, armed: false }), { log: () => {} });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.attempt).toBe(0);
    expect(Number.isSafeInteger(seen[0]!.epoch)).toBe(true);
  });
});
