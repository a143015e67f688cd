import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFile, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { savepointDirName, taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION } from '../../../lib/checkpoint/types.ts';
import type { CheckpointMetadata, TaskStateHandle } from '../../../lib/checkpoint/types.ts';
import { InternalError } from '../../../lib/core/index.ts';
import {
  CheckpointCorruptError,
  FileCheckpointStorage,
  FileSavepointStorage,
  SnapshotDirectory,
  decodeTaskSnapshot,
  encodeTaskSnapshot,
} from '../../../lib/storage/index.ts';

let root: string;
let checkpoints: FileCheckpointStorage;
let savepoints: FileSavepointStorage;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-sp-'));
  checkpoints = new FileCheckpointStorage(join(root, 'checkpoints'));
  savepoints = new FileSavepointStorage(join(root, 'checkpoints', 'savepoints'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Task files of checkpoint `id` as tasks write them (into checkpoint storage), and the metadata that lists them. */
async function staged(id: number, savepoint = true): Promise<CheckpointMetadata> {
  const tasks: TaskStateHandle[] = [];
  for (const subtask of [0, 1]) {
    const task = { vertex: 2, subtask };
    const data = encodeTaskSnapshot({ vertex: 2, subtask, operators: [{ nodeId: 5, watermark: 7, operatorState: [{ id, subtask }] }] });
    tasks.push({ task, vertexName: 'Sink', ...(await checkpoints.writeTaskState(id, taskStateFileName(task), data)) });
  }
  return {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint,
    triggeredAt: 1_700_000_000_000 + id,
    completedAt: 1_700_000_000_100 + id,
    maxParallelism: 128,
    parallelism: { 0: 2, 2: 2 },
    tasks,
  };
}

describe('FileSavepointStorage', () => {
  it('writes a self-contained savepoint-<id>-<time> directory that reads back on its own', async () => {
    const metadata = await staged(13);
    const path = await savepoints.write(metadata, checkpoints);
    expect(path).toBe(join(root, 'checkpoints', 'savepoints', savepointDirName(13, metadata.triggeredAt)));
    expect((await readdir(path)).sort()).toEqual(['_metadata', 'task-2-0.state', 'task-2-1.state']);

    const dir = new SnapshotDirectory(path);
    const read = await dir.readMetadata();
    expect(read.savepoint).toBe(true);
    expect(read.tasks.map((t) => t.path)).toEqual([
      `${savepointDirName(13, metadata.triggeredAt)}/task-2-0.state`,
      `${savepointDirName(13, metadata.triggeredAt)}/task-2-1.state`,
    ]);
    await dir.verifyTaskFiles(read);
    const snapshot = decodeTaskSnapshot(await dir.readTaskState(read.tasks[1]!.path, read.tasks[1]!));
    expect(snapshot.operators[0]?.operatorState).toEqual([{ id: 13, subtask: 1 }]);
    // The checkpoint folder holds no complete checkpoint: a savepoint never becomes a recovery point there.
    expect(await checkpoints.list()).toEqual([]);
  });

  it('still restores after the savepoint directory is moved and renamed', async () => {
    const path = await savepoints.write(await staged(4), checkpoints);
    await mkdir(join(root, 'elsewhere'));
    const moved = join(root, 'elsewhere', 'before-upgrade');
    await rename(path, moved);
    const dir = new SnapshotDirectory(moved);
    const read = await dir.readMetadata();
    await dir.verifyTaskFiles(read);
    expect(decodeTaskSnapshot(await dir.readTaskState(read.tasks[0]!.path, read.tasks[0]!)).subtask).toBe(0);
  });

  it('detects a damaged task file of a savepoint', async () => {
    const path = await savepoints.write(await staged(5), checkpoints);
    await appendFile(join(path, 'task-2-1.state'), 'x');
    const dir = new SnapshotDirectory(path);
    const read = await dir.readMetadata();
    await expect(dir.verifyTaskFiles(read)).rejects.toBeInstanceOf(CheckpointCorruptError);
    await expect(dir.readTaskState(read.tasks[1]!.path, read.tasks[1]!)).rejects.toBeInstanceOf(CheckpointCorruptError);
  });

  it('leaves no savepoint directory when a task file cannot be copied', async () => {
    const metadata = await staged(6);
    await appendFile(join(root, 'checkpoints', 'chk-0000000006', 'task-2-0.state'), 'garbage');
    await expect(savepoints.write(metadata, checkpoints)).rejects.toBeInstanceOf(CheckpointCorruptError);
    expect(await readdir(join(root, 'checkpoints', 'savepoints'))).toEqual([]);
  });

  it('refuses metadata that is not a savepoint, and a savepoint directory that exists', async () => {
    await expect(savepoints.write(await staged(7, false), checkpoints)).rejects.toBeInstanceOf(InternalError);
    const metadata = await staged(8);
    await savepoints.write(metadata, checkpoints);
    await expect(savepoints.write(metadata, checkpoints)).rejects.toThrow(/already exists/);
  });

  it('removes half-written savepoints at start-up and nothing else', async () => {
    const kept = await savepoints.write(await staged(9), checkpoints);
    const half = join(root, 'checkpoints', 'savepoints', `.${savepointDirName(10, 1)}.inprogress`);
    await mkdir(half);
    expect(await savepoints.removeIncomplete()).toEqual([`.${savepointDirName(10, 1)}.inprogress`]);
    expect(existsSync(half)).toBe(false);
    expect(existsSync(kept)).toBe(true);
    expect(await new FileSavepointStorage(join(root, 'missing')).removeIncomplete()).toEqual([]);
  });

  it('reports a directory without metadata', async () => {
    const dir = new SnapshotDirectory(join(root, 'checkpoints'));
    expect(await dir.hasMetadata()).toBe(false);
    expect(await new SnapshotDirectory(join(root, 'nowhere')).hasMetadata()).toBe(false);
    await expect(dir.readMetadata()).rejects.toBeInstanceOf(CheckpointCorruptError);
  });
});
