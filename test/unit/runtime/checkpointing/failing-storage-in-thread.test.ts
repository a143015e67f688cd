import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { StreamEnvironment, TumblingEventTimeWindows, WatermarkStrategy, generatorSource, type Transaction } from '../../../../lib/index.ts';
import { runInThisThread } from '../../../../lib/runtime/in-thread-runner.ts';
import { FileCheckpointStorage } from '../../../../lib/storage/index.ts';
import { CheckpointIoError } from '../../../../lib/storage/errors.ts';
import { countAndSum } from '../../../../bench/count-and-sum.ts';
import { committingSink } from '../../../harness/committing-sink.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-failing-in-thread-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

describe('in-thread runner with failing checkpoint storage', () => {
  it('fails the job (every task cancelled, including those waiting for the final checkpoint) instead of hanging', async () => {
    vi.spyOn(FileCheckpointStorage.prototype, 'writeTaskState').mockImplementation(function (this: FileCheckpointStorage, id: number, name: string) {
      const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return Promise.reject(new CheckpointIoError('write task state file', `${this.location}/chk-${id}/${name}`, enospc));
    });
    const env = new StreamEnvironment({ parallelism: 2, batchSize: 100 });
    env
      .fromSource(
        generatorSource({ count: 2000, keyCount: 5, seed: 5, startTime: 0, eventIntervalMs: 1 }),
        WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(0),
      )
      .keyBy((t) => t.account)
      .window(TumblingEventTimeWindows.of(500))
      .aggregate(countAndSum, (a, account, w) => ({ account, windowStart: w.start, count: a.count }))
      .sinkTo(committingSink(new Map()));
    const logs: string[] = [];
    const run = runInThisThread(env, {
      checkpointing: { dir: join(root, 'chk'), intervalMs: 60_000, tolerableFailures: 1, failureBackoffMs: 1 },
      restart: { kind: 'none' },
      log: (l) => logs.push(l),
    });
    await expect(run).rejects.toThrow(/2 checkpoints failed in a row, more than the 1 tolerated .*ENOSPC: no space left on device/);
  });
});
