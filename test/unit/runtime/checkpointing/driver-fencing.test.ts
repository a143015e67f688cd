import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { taskStateFileName } from '../../../../lib/checkpoint/naming.ts';
import type { TaskId } from '../../../../lib/checkpoint/types.ts';
import { EmbeddedCheckpointDriver } from '../../../../lib/runtime/checkpoint-driver/embedded-driver.ts';
import { FileCheckpointStorage, encodeTaskSnapshot } from '../../../../lib/storage/index.ts';

const TASK: TaskId = { vertex: 0, subtask: 0 };
const CURRENT = { attempt: 1, epoch: 4 };
const ZOMBIE = { attempt: 0, epoch: 3 };
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-driver-fencing-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('embedded driver fencing', () => {
  it('logs and ignores a stale attempt`s decline and ack, completes with the current one`s, and records the token', async () => {
    const storage = new FileCheckpointStorage(join(root, 'chk'));
    const logs: string[] = [];
    const notified: number[] = [];
    const driver: EmbeddedCheckpointDriver = new EmbeddedCheckpointDriver({
      options: { intervalMs: 60_000 },
      storage,
      tasks: [TASK],
      sourceTasks: [TASK],
      maxParallelism: 128,
      lastCheckpointId: 0,
      retainedCheckpointIds: [],
      fencing: CURRENT,
      log: (l) => logs.push(l),
      dispatch: {
        trigger: (barrier) => {
          void (async () => {
            const data = encodeTaskSnapshot({ ...TASK, operators: [] });
            const written = await storage.writeTaskState(barrier.checkpointId, taskStateFileName(TASK), data);
            const handle = { task: TASK, vertexName: 'source', ...written };
            // A zombie of the previous attempt answers first: neither its decline nor its ack counts.
            driver.decline(barrier.checkpointId, TASK, 'zombie snapshot failed', ZOMBIE);
            driver.ack(barrier.checkpointId, handle, ZOMBIE);
            driver.ack(barrier.checkpointId, handle, CURRENT);
          })();
        },
        notifyComplete: (id) => notified.push(id),
      },
    });
    driver.sourceFinished(TASK);
    for (const deadline = Date.now() + 20_000; notified.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
    await driver.stop();
    expect(notified).toEqual([1]);
    expect(logs.some((l) => /refused a request from epoch 3 \(attempt 0\): it already serves epoch 4/.test(l))).toBe(true);
    expect(logs.some((l) => /aborted/.test(l))).toBe(false);
    const latest = await storage.latestComplete();
    expect(latest).toMatchObject({ checkpointId: 1, fencing: CURRENT });
  });
});
