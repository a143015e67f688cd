import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { metadataPath } from '../../../lib/checkpoint/naming.ts';
import { ConfigError } from '../../../lib/core/index.ts';
import { CheckpointCorruptError } from '../../../lib/storage/errors.ts';
import { FileCheckpointStorage, SnapshotDirectory } from '../../../lib/storage/index.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { ObjectSavepointStorage } from '../../../lib/storage/object-savepoint-storage.ts';
import { writeTestCheckpoint } from '../../harness/checkpoint-storage-fixtures.ts';

let root: string;
let checkpoints: FileCheckpointStorage;
let store: FsObjectStore;
let savepoints: ObjectSavepointStorage;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-object-savepoints-'));
  checkpoints = new FileCheckpointStorage(join(root, 'checkpoints'));
  store = new FsObjectStore(join(root, 'savepoints'));
  savepoints = new ObjectSavepointStorage(store);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('ObjectSavepointStorage (over a folder: the layout S3 gets)', () => {
  it('writes a self-contained savepoint, metadata last, that restores on its own', async () => {
    const local = join(root, 'local.sst');
    await writeFile(local, 'shared bytes');
    const shared = await checkpoints.sharedState.put('000001.sst', local);
    const metadata = await writeTestCheckpoint(checkpoints, 3, { savepoint: true, shared: [shared] });
    const path = await savepoints.write(metadata, checkpoints);
    expect(path).toBe(savepoints.pathOf(metadata));
    expect(path).toMatch(/savepoint-0000000003-3000$/);
    expect((await store.list('savepoint-0000000003-3000')).sort()).toEqual([
      'savepoint-0000000003-3000/_metadata',
      'savepoint-0000000003-3000/shared/000001.sst',
      'savepoint-0000000003-3000/task-1-0.state',
      'savepoint-0000000003-3000/task-1-1.state',
    ]);
    // The same directory read as --restore reads a savepoint.
    const dir = new SnapshotDirectory(path);
    const read = await dir.readMetadata();
    await dir.verifyTaskFiles(read);
    expect(read.tasks.map((t) => t.path)).toEqual(['savepoint-0000000003-3000/task-1-0.state', 'savepoint-0000000003-3000/task-1-1.state']);
    await expect(savepoints.write(metadata, checkpoints)).rejects.toThrow(/already exists/);
  });

  it('reads a savepoint back from the object store (openSnapshot), verifying task and shared files', async () => {
    const local = join(root, 'local.sst');
    await writeFile(local, 'shared bytes');
    const shared = await checkpoints.sharedState.put('000001.sst', local);
    const metadata = await writeTestCheckpoint(checkpoints, 3, { savepoint: true, shared: [shared] });
    const path = await savepoints.write(metadata, checkpoints);
    const reader = savepoints.openSnapshot('savepoint-0000000003-3000');
    expect(reader.location).toBe(path);
    expect(await reader.hasMetadata()).toBe(true);
    const read = await reader.readMetadata();
    await reader.verifyTaskFiles(read);
    const [first] = read.tasks;
    expect(Buffer.from(await reader.readTaskState(first!.path, first!))).toEqual(
      Buffer.from(await checkpoints.readTaskState(metadata.tasks[0]!.path, metadata.tasks[0]!)),
    );
    const copy = join(root, 'copy.sst');
    await reader.sharedState.get(read.tasks[0]!.sharedFiles![0]!, copy);
    expect(await readFile(copy, 'utf8')).toBe('shared bytes');

    expect(await savepoints.openSnapshot('savepoint-0000000009-9000').hasMetadata()).toBe(false);
    expect(() => savepoints.openSnapshot('..')).toThrow(ConfigError);
    expect(() => savepoints.openSnapshot('a/b')).toThrow(ConfigError);
    await store.put('savepoint-0000000003-3000/task-1-1.state', Buffer.from('damaged'));
    await expect(reader.verifyTaskFiles(read)).rejects.toBeInstanceOf(CheckpointCorruptError);
    await expect(reader.readTaskState(read.tasks[1]!.path, read.tasks[1]!)).rejects.toBeInstanceOf(CheckpointCorruptError);
  });

  it('removeIncomplete deletes savepoint folders without metadata and nothing else', async () => {
    const metadata = await writeTestCheckpoint(checkpoints, 4, { savepoint: true });
    await savepoints.write(metadata, checkpoints);
    await store.put('savepoint-0000000005-5000/task-1-0.state', Buffer.from('half'));
    await store.put('notes/readme', Buffer.from('mine'));
    expect(await savepoints.removeIncomplete()).toEqual(['savepoint-0000000005-5000']);
    expect((await store.listFolders('')).sort()).toEqual(['notes', 'savepoint-0000000004-4000']);
    expect(await store.size(`savepoint-0000000004-4000/${metadataPath({ kind: 'checkpoint', checkpointId: 4 }).split('/')[1]}`)).toBeGreaterThan(0);
  });
});
