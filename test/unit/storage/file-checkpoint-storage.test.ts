import { afterEach, beforeEach, describe, it, expect } from 'vitest';
import { mkdtemp, mkdir, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkpointDirName,
  metadataPath,
  metadataTempPath,
  taskStateFileName,
  taskStatePath,
} from '../../../lib/checkpoint/naming.ts';
import { InternalError } from '../../../lib/core/index.ts';
import {
  CheckpointCorruptError,
  CheckpointIoError,
  FileCheckpointStorage,
  decodeTaskSnapshot,
} from '../../../lib/storage/index.ts';
import { latestWithSkips as latestSkipping, writeTestCheckpoint, type TestCheckpointOptions } from '../../harness/checkpoint-storage-fixtures.ts';

let root: string;
let storage: FileCheckpointStorage;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-chk-'));
  storage = new FileCheckpointStorage(join(root, 'checkpoints'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const chk = (id: number) => ({ kind: 'checkpoint' as const, checkpointId: id });
const abs = (storagePath: string) => join(root, 'checkpoints', ...storagePath.split('/'));

const writeCheckpoint = (id: number, options: TestCheckpointOptions = {}) => writeTestCheckpoint(storage, id, options);
const latestWithSkips = () => latestSkipping(storage);

describe('FileCheckpointStorage', () => {
  it('starts empty when the folder does not exist yet', async () => {
    expect(await storage.list()).toEqual([]);
    expect(await storage.latestComplete()).toBeUndefined();
    expect(await storage.removeIncomplete()).toEqual([]);
    expect(storage.location).toBe(join(root, 'checkpoints'));
  });

  it('writes task state, commits metadata, lists and reads it back verified', async () => {
    const metadata = await writeCheckpoint(1);
    expect(metadata.tasks[0]?.path).toBe(`${checkpointDirName(1)}/task-1-0.state`);
    expect(existsSync(abs(metadataPath(chk(1))))).toBe(true);
    expect(await storage.list()).toEqual([{ status: 'complete', checkpointId: 1, metadata }]);
    expect(await storage.latestComplete()).toEqual(metadata);
    const handle = metadata.tasks[1]!;
    const snapshot = decodeTaskSnapshot(await storage.readTaskState(handle.path, handle), handle.path);
    expect(snapshot.operators[0]?.operatorState).toEqual([{ id: 1, subtask: 1 }]);
    // Only final names remain: no temporary files after a successful commit.
    expect((await readdir(abs(checkpointDirName(1)))).sort()).toEqual(['_metadata', 'task-1-0.state', 'task-1-1.state']);
  });

  it('stores and verifies a task file larger than one hashing slice', async () => {
    const data = randomBytes(20 * 1024 * 1024 + 17);
    const written = await storage.writeTaskState(1, taskStateFileName({ vertex: 2, subtask: 3 }), data);
    expect(written.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    expect(written.bytes).toBe(data.length);
    const metadata = { ...(await writeCheckpoint(1, { commit: false })) };
    await storage.commitMetadata({ ...metadata, tasks: [...metadata.tasks, { task: { vertex: 2, subtask: 3 }, vertexName: 'Big', ...written }] });
    expect((await latestWithSkips()).id).toBe(1);
    expect(Buffer.from(await storage.readTaskState(written.path, written)).equals(data)).toBe(true);
  });

  it('lists newest first and restores the newest complete one', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    await writeCheckpoint(10);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([10, 2, 1]);
    expect((await latestWithSkips()).id).toBe(10);
  });

  it('does not count a checkpoint without metadata (a crash before the commit)', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { commit: false });
    // Crash debris: a half-written metadata temp file and a task temp file.
    await writeFile(abs(metadataTempPath(chk(2))), 'SLUICE CHECKPOINT METADATA v1\n{"checkp');
    await writeFile(join(abs(checkpointDirName(2)), 'task-1-0.state.inprogress-deadbeef'), 'partial');
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([1]);
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped).toEqual([]);
  });

  it('removeIncomplete deletes checkpoints without metadata and temp files, and keeps complete ones', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { commit: false });
    await writeCheckpoint(3);
    await mkdir(abs(checkpointDirName(4)));
    await writeFile(abs(metadataTempPath(chk(4))), 'partial');
    const leftover = join(abs(checkpointDirName(3)), 'task-1-5.state.inprogress-0badf00d');
    await writeFile(leftover, 'partial');
    await writeFile(abs('notes.txt'), 'not a checkpoint');

    expect(await storage.removeIncomplete()).toEqual([2, 4]);
    expect(existsSync(abs(checkpointDirName(2)))).toBe(false);
    expect(existsSync(abs(checkpointDirName(4)))).toBe(false);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(abs('notes.txt'))).toBe(true);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([3, 1]);
    expect((await latestWithSkips()).id).toBe(3);
    expect(await storage.removeIncomplete()).toEqual([]);
  });

  it('falls back to the previous checkpoint when the newest metadata is truncated', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    const file = abs(metadataPath(chk(2)));
    await truncate(file, (await readFile(file)).length - 30);
    const listed = await storage.list();
    expect(listed[0]).toMatchObject({ status: 'corrupt', checkpointId: 2 });
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.[0]).toBe(2);
    expect(skipped[0]?.[1]).toContain(file);
  });

  it('falls back when a byte of the newest metadata is flipped', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    const file = abs(metadataPath(chk(2)));
    const bytes = await readFile(file);
    bytes.writeUInt8(bytes.readUInt8(60) ^ 0x01, 60);
    await writeFile(file, bytes);
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([2]);
    expect(skipped[0]?.[1]).toMatch(/sha256/);
  });

  it('falls back when a task file has the right size but the wrong sha256, and readTaskState refuses it', async () => {
    await writeCheckpoint(1);
    const newest = await writeCheckpoint(2);
    const handle = newest.tasks[1]!;
    const bytes = await readFile(abs(handle.path));
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await writeFile(abs(handle.path), bytes);

    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.[1]).toContain('task-1-1.state');
    expect(skipped[0]?.[1]).toContain('sha256');
    const error = await storage.readTaskState(handle.path, handle).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointCorruptError);
    expect((error as CheckpointCorruptError).retriable).toBe(false);
    expect((error as CheckpointCorruptError).path).toBe(abs(handle.path));
  });

  it('falls back when a task file is missing or has the wrong size', async () => {
    await writeCheckpoint(1);
    const second = await writeCheckpoint(2);
    const third = await writeCheckpoint(3);
    await rm(abs(third.tasks[0]!.path));
    await writeFile(abs(second.tasks[0]!.path), Buffer.concat([await readFile(abs(second.tasks[0]!.path)), Buffer.from([1])]));
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([3, 2]);
    expect(skipped[0]?.[1]).toContain('missing');
    expect(skipped[1]?.[1]).toMatch(/bytes, the metadata says/);
    await expect(storage.readTaskState(third.tasks[0]!.path, third.tasks[0]!)).rejects.toThrow(/missing/);
  });

  it('returns undefined, with warnings, when every checkpoint is corrupt', async () => {
    await writeCheckpoint(1);
    await writeFile(abs(metadataPath(chk(1))), 'garbage');
    const { id, skipped } = await latestWithSkips();
    expect(id).toBeUndefined();
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([1]);
  });

  it('refuses task paths outside the naming scheme', async () => {
    await expect(storage.readTaskState('../secret.state', { bytes: 0, sha256: '0'.repeat(64) })).rejects.toBeInstanceOf(CheckpointCorruptError);
    await expect(storage.writeTaskState(1, '../escape.state', new Uint8Array(1))).rejects.toBeInstanceOf(InternalError);
  });

  it('reports I/O failures as retriable CheckpointIoErrors naming the path', async () => {
    await writeFile(join(root, 'a-file'), 'x');
    const broken = new FileCheckpointStorage(join(root, 'a-file', 'checkpoints'));
    const error = await broken.writeTaskState(1, taskStateFileName({ vertex: 0, subtask: 0 }), new Uint8Array(4)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointIoError);
    expect((error as CheckpointIoError).retriable).toBe(true);
    expect((error as CheckpointIoError).message).toContain(join(root, 'a-file', 'checkpoints'));
    expect((error as CheckpointIoError).cause).toBeDefined();
    await expect(broken.list()).rejects.toBeInstanceOf(CheckpointIoError);
  });

  it('refuses to commit the same checkpoint twice', async () => {
    const metadata = await writeCheckpoint(1);
    await expect(storage.commitMetadata(metadata)).rejects.toBeInstanceOf(InternalError);
    expect(await storage.latestComplete()).toEqual(metadata);
  });

  it('retention keeps exactly the newest N complete checkpoints and their files', async () => {
    for (const id of [1, 2, 3, 4, 5]) await writeCheckpoint(id);
    expect(await storage.applyRetention(2)).toEqual([1, 2, 3]);
    const remaining = await storage.list();
    expect(remaining.map((c) => c.checkpointId)).toEqual([5, 4]);
    for (const checkpoint of remaining) {
      if (checkpoint.status !== 'complete') throw new Error('expected complete checkpoints');
      for (const task of checkpoint.metadata.tasks) await storage.readTaskState(task.path, task);
    }
    expect(existsSync(abs(checkpointDirName(3)))).toBe(false);
    expect(await storage.applyRetention(2)).toEqual([]);
    expect(await storage.applyRetention(5)).toEqual([]);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([5, 4]);
  });

  it('retention skips corrupt checkpoints when counting, leaves newer work alone and keeps savepoints', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { savepoint: true });
    await writeCheckpoint(3, { commit: false }); // abandoned, older than what is retained
    await writeCheckpoint(4);
    await writeCheckpoint(5);
    await writeFile(abs(metadataPath(chk(5))), 'garbage'); // corrupt, newer than what is retained
    await writeCheckpoint(6);
    await writeCheckpoint(7, { commit: false }); // in flight

    expect(await storage.applyRetention(2)).toEqual([1, 3]);
    expect((await storage.list()).map((c) => `${c.checkpointId}:${c.status}`)).toEqual(['6:complete', '5:corrupt', '4:complete', '2:complete']);
    expect(existsSync(abs(taskStatePath(chk(7), { vertex: 1, subtask: 0 })))).toBe(true);
    expect((await latestWithSkips()).id).toBe(6);
  });

  it('retention never deletes a directory that a retained checkpoint points into', async () => {
    const first = await writeCheckpoint(1);
    await writeCheckpoint(2);
    // Checkpoint 3 reuses a file of checkpoint 1 (as incremental snapshots will).
    const third = await writeCheckpoint(3, { commit: false });
    await storage.commitMetadata({ ...third, tasks: [first.tasks[0]!, third.tasks[1]!] });
    expect(await storage.applyRetention(1)).toEqual([2]);
    expect((await latestWithSkips()).id).toBe(3);
  });

  it('rejects a retention count below one', async () => {
    await expect(storage.applyRetention(0)).rejects.toThrow(/at least 1/);
  });

  it('discard removes a checkpoint and is idempotent', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    await storage.discard(2);
    expect(existsSync(abs(checkpointDirName(2)))).toBe(false);
    await storage.discard(2);
    await storage.discard(99);
    expect((await latestWithSkips()).id).toBe(1);
  });
});

