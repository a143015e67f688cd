import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkpointDirName, taskStateFileName } from '../../../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION, type TaskId } from '../../../../lib/checkpoint/types.ts';
import { FencedError, type FencingToken } from '../../../../lib/core/index.ts';
import { EmbeddedCheckpointDriver } from '../../../../lib/runtime/checkpoint-driver/embedded-driver.ts';
import { FileCheckpointStorage, encodeTaskSnapshot } from '../../../../lib/storage/index.ts';

/**
 * Run O (epoch 3) is still running when run N (epoch 4) takes over the same checkpoint folder and starts numbering
 * its checkpoints where O's stopped. O's coordinator then takes "its" checkpoint 21: whatever fails, it must neither
 * delete N's checkpoint 21 nor keep going.
 */
const TASK: TaskId = { vertex: 0, subtask: 0 };
const OTHER: TaskId = { vertex: 1, subtask: 0 };
const OLD: FencingToken = { attempt: 0, epoch: 3 };
const NEW: FencingToken = { attempt: 0, epoch: 4 };
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-zombie-driver-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Writes N's checkpoint 21 (task files of both tasks), committed or still in flight. */
async function newRunCheckpoint(storage: FileCheckpointStorage, commit: boolean): Promise<void> {
  const tasks = [];
  for (const task of commit ? [TASK, OTHER] : [OTHER]) {
    const written = await storage.writeTaskState(21, taskStateFileName(task), encodeTaskSnapshot({ ...task, operators: [] }), NEW);
    tasks.push({ task, vertexName: 'v', ...written });
  }
  if (!commit) return;
  await storage.commitMetadata({
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: 21,
    savepoint: false,
    triggeredAt: 1,
    completedAt: 2,
    maxParallelism: 128,
    parallelism: { 0: 1, 1: 1 },
    tasks,
    fencing: NEW,
  });
}

/** O's driver over its own storage object, one task, triggering at once; `write` is how its task answers. */
function zombieDriver(
  storage: FileCheckpointStorage,
  logs: string[],
  write: (driver: EmbeddedCheckpointDriver, checkpointId: number) => Promise<void>,
): EmbeddedCheckpointDriver {
  const driver: EmbeddedCheckpointDriver = new EmbeddedCheckpointDriver({
    options: { intervalMs: 1 },
    storage,
    tasks: [TASK],
    sourceTasks: [TASK],
    maxParallelism: 128,
    lastCheckpointId: 20,
    retainedCheckpointIds: [],
    fencing: OLD,
    log: (l) => logs.push(l),
    dispatch: { trigger: (barrier) => void write(driver, barrier.checkpointId), notifyComplete: () => {} },
  });
  return driver;
}

async function failure(driver: EmbeddedCheckpointDriver): Promise<unknown> {
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('the zombie driver did not fail')), 10_000));
  return Promise.race([driver.failed, timeout]).catch((err: unknown) => err);
}

describe('a fenced zombie coordinator', () => {
  it('whose task write is refused fails with the FencedError and leaves the new run`s complete checkpoint alone', async () => {
    const dir = join(root, 'chk');
    const old = new FileCheckpointStorage(dir);
    await old.fence(OLD);
    const current = new FileCheckpointStorage(dir);
    await current.fence(NEW);
    await newRunCheckpoint(current, true);
    const logs: string[] = [];
    const driver = zombieDriver(old, logs, async (d, id) => {
      try {
        await old.writeTaskState(id, taskStateFileName(TASK), encodeTaskSnapshot({ ...TASK, operators: [] }), OLD);
      } catch (err) {
        d.decline(id, TASK, err instanceof Error ? err.message : String(err), OLD);
      }
    });
    expect(await failure(driver)).toBeInstanceOf(FencedError);
    await driver.stop();
    expect((await current.latestComplete())?.checkpointId).toBe(21);
    expect(logs.some((l) => /fenced/.test(l))).toBe(true);
  });

  it('whose metadata commit is refused fails without an abort, so the new run`s checkpoint in flight keeps its files', async () => {
    const dir = join(root, 'chk');
    const old = new FileCheckpointStorage(dir);
    await old.fence(OLD);
    const current = new FileCheckpointStorage(dir);
    await current.fence(NEW);
    await newRunCheckpoint(current, false);
    const logs: string[] = [];
    // The zombie's task wrote before the fence went up (no token checked here); only its commit is refused.
    const driver = zombieDriver(old, logs, async (d, id) => {
      const written = await old.writeTaskState(id, taskStateFileName(TASK), encodeTaskSnapshot({ ...TASK, operators: [] }));
      d.ack(id, { task: TASK, vertexName: 'v', ...written }, OLD);
    });
    expect(await failure(driver)).toBeInstanceOf(FencedError);
    await driver.stop();
    expect(await readdir(join(dir, checkpointDirName(21)))).toContain(taskStateFileName(OTHER, NEW.epoch));
    expect(logs.some((l) => /aborted/.test(l))).toBe(false);
    await expect(old.discard(21)).rejects.toBeInstanceOf(FencedError);
    await expect(old.removeIncomplete()).rejects.toBeInstanceOf(FencedError);
    expect(await readdir(join(dir, checkpointDirName(21)))).toContain(taskStateFileName(OTHER, NEW.epoch));
  });
});
