import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskId } from '../../../../lib/checkpoint/types.ts';
import { CheckpointingFailedError } from '../../../../lib/runtime/checkpoint-driver/checkpointing-failed-error.ts';
import { EmbeddedCheckpointDriver } from '../../../../lib/runtime/checkpoint-driver/embedded-driver.ts';
import { FileCheckpointStorage } from '../../../../lib/storage/index.ts';

const TASKS: TaskId[] = [{ vertex: 0, subtask: 0 }];
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-failing-storage-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A driver whose only task declines every barrier, as one whose checkpoint storage is full. */
function failingDriver(options: { tolerableFailures: number; discardFails?: boolean }) {
  const logs: string[] = [];
  const triggered: number[] = [];
  const storage = new FileCheckpointStorage(join(root, 'chk'));
  if (options.discardFails === true) storage.discard = () => Promise.reject(new Error('EACCES: permission denied, rmdir'));
  const driver: EmbeddedCheckpointDriver = new EmbeddedCheckpointDriver({
    options: { intervalMs: 60_000, tolerableFailures: options.tolerableFailures, failureBackoffMs: 1, maxFailureBackoffMs: 4 },
    storage,
    tasks: TASKS,
    sourceTasks: TASKS,
    maxParallelism: 128,
    lastCheckpointId: 0,
    retainedCheckpointIds: [],
    warningIntervalMs: 60_000,
    log: (l) => logs.push(l),
    dispatch: {
      trigger: (barrier) => {
        triggered.push(barrier.checkpointId);
        queueMicrotask(() => driver.decline(barrier.checkpointId, TASKS[0]!, `could not write ${root}/chk: ENOSPC: no space left on device`));
      },
      notifyComplete: () => {},
    },
  });
  return { driver, logs, triggered };
}

describe('embedded driver with failing checkpoint storage', () => {
  it('fails the job after the tolerated failures of the final checkpoint instead of retrying it forever', async () => {
    const { driver, logs, triggered } = failingDriver({ tolerableFailures: 2 });
    driver.sourceFinished(TASKS[0]!);
    const err = await driver.failed.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointingFailedError);
    expect((err as Error).message).toMatch(/^3 checkpoints failed in a row, more than the 2 tolerated .*checkpoint 3: .*ENOSPC: no space left on device/);
    await driver.stop();
    expect(triggered).toEqual([1, 2, 3]);
    // The same warning three times: printed once, then summarised.
    expect(logs).toEqual([
      expect.stringMatching(/^checkpoint 1 aborted: task 0\/0 declined: could not write .*ENOSPC/),
      expect.stringMatching(/^checkpoint 3 aborted: .* \(and 1 more like it since the last report\)$/),
    ]);
  });

  it('still fails the job when removing the aborted checkpoints fails too', async () => {
    const { driver, logs } = failingDriver({ tolerableFailures: 0, discardFails: true });
    driver.sourceFinished(TASKS[0]!);
    await expect(driver.failed).rejects.toBeInstanceOf(CheckpointingFailedError);
    await driver.stop();
    expect(logs.some((l) => /could not remove checkpoint 1: EACCES/.test(l))).toBe(true);
  });
});
