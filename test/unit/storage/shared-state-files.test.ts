import { afterEach, beforeEach, describe, it, expect } from 'vitest';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import { SharedFileRegistry } from '../../../lib/checkpoint/shared-file-registry.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata, type SharedFileEntry } from '../../../lib/checkpoint/types.ts';
import { CheckpointCorruptError, FileCheckpointStorage, encodeTaskSnapshot } from '../../../lib/storage/index.ts';
import { FileSavepointStorage } from '../../../lib/storage/fs/file-savepoint-storage.ts';
import { SnapshotDirectory } from '../../../lib/storage/fs/snapshot-directory.ts';
import { decodeMetadata, encodeMetadata } from '../../../lib/storage/metadata-codec.ts';

let root: string;
let storage: FileCheckpointStorage;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-shared-'));
  storage = new FileCheckpointStorage(join(root, 'checkpoints'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function putShared(name: string, content: string): Promise<SharedFileEntry> {
  const local = join(root, `local-${name}`);
  await writeFile(local, content);
  return storage.sharedState.put(name, local);
}

/** Commits checkpoint `id` whose single task lists `shared`. */
async function commit(id: number, shared: SharedFileEntry[], savepoint = false): Promise<CheckpointMetadata> {
  const task = { vertex: 0, subtask: 0 };
  const written = await storage.writeTaskState(id, taskStateFileName(task), encodeTaskSnapshot({ vertex: 0, subtask: 0, operators: [] }));
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint,
    triggeredAt: id * 1000,
    completedAt: id * 1000 + 1,
    maxParallelism: 128,
    parallelism: { 0: 1 },
    tasks: [{ task, vertexName: 'Keyed', ...written, sharedFiles: shared }],
  };
  await storage.commitMetadata(metadata);
  return metadata;
}

const sharedNames = async (): Promise<string[]> => (await readdir(join(root, 'checkpoints', 'shared')).catch(() => [])).sort();

describe('SharedFileRegistry', () => {
  it('frees a file only when its last referring checkpoint is released', () => {
    const a = { tasks: [{ task: { vertex: 0, subtask: 0 }, vertexName: 'x', path: 'p', bytes: 1, sha256: 'h', sharedFiles: [{ path: 'shared/base', bytes: 1, sha256: 'h' }] }] };
    const b = { tasks: [{ ...a.tasks[0]!, sharedFiles: [{ path: 'shared/base', bytes: 1, sha256: 'h' }, { path: 'shared/d1', bytes: 1, sha256: 'h' }] }] };
    const registry = new SharedFileRegistry([a, b]);
    expect(registry.referenceCount('shared/base')).toBe(2);
    expect(registry.release(a)).toEqual([]);
    expect(registry.release(b).sort()).toEqual(['shared/base', 'shared/d1']);
    expect(registry.unreferenced(['shared/base', 'shared/x'])).toEqual(['shared/base', 'shared/x']);
  });
});

describe('shared state files in FileCheckpointStorage', () => {
  it('puts, gets and verifies a shared file; a retried put keeps one file', async () => {
    const ref = await putShared('base-1', 'hello state');
    expect(ref.path).toBe('shared/base-1');
    expect(await putShared('base-1', 'hello state')).toEqual(ref);
    const out = join(root, 'restore', 'base');
    await storage.sharedState.get(ref, out);
    expect(await readFile(out, 'utf8')).toBe('hello state');
    await expect(storage.sharedState.get({ ...ref, bytes: 3 }, out)).rejects.toBeInstanceOf(CheckpointCorruptError);
    expect(await sharedNames()).toEqual(['base-1']);
  });

  it('refuses names that could leave the shared folder', async () => {
    await expect(putShared('../escape', 'x')).rejects.toThrow();
    await expect(storage.sharedState.get({ path: 'shared/../chk-1/_metadata', bytes: 1, sha256: 'x' }, join(root, 'o'))).rejects.toBeInstanceOf(CheckpointCorruptError);
  });

  it('retention keeps files a kept checkpoint lists and deletes those only discarded checkpoints listed', async () => {
    const base = await putShared('base', 'B');
    const d2 = await putShared('d2', 'two');
    const d3 = await putShared('d3', 'three');
    const base4 = await putShared('base4', 'B4');
    await commit(1, [base]);
    await commit(2, [base, d2]);
    await commit(3, [base, d2, d3]);
    await commit(4, [base4]);
    expect(await storage.applyRetention(2)).toEqual([1, 2]);
    expect(await sharedNames()).toEqual(['base', 'base4', 'd2', 'd3']);
    // Checkpoint 3 goes: base, d2 and d3 lose their last reference.
    await commit(5, [base4]);
    expect(await storage.applyRetention(2)).toEqual([3]);
    expect(await sharedNames()).toEqual(['base4']);
  });

  it('retention never deletes a file an in-flight checkpoint has put but not committed yet', async () => {
    const base = await putShared('base', 'B');
    await commit(1, [base]);
    await commit(2, []);
    await putShared('in-flight', 'not yet listed');
    await storage.applyRetention(1);
    expect(await sharedNames()).toEqual(['in-flight']);
  });

  it('start-up cleanup removes shared files no complete checkpoint lists, and leftover temporary files', async () => {
    const base = await putShared('base', 'B');
    await putShared('orphan', 'written by a checkpoint that never completed');
    await writeFile(join(root, 'checkpoints', 'shared', 'x.inprogress-abcd'), 'partial');
    await commit(1, [base]);
    await storage.removeIncomplete();
    expect(await sharedNames()).toEqual(['base']);
  });

  it('skips a checkpoint whose shared file is missing or has another size', async () => {
    const base = await putShared('base', 'B');
    const d2 = await putShared('d2', 'two');
    await commit(1, [base]);
    await commit(2, [base, d2]);
    await writeFile(join(root, 'checkpoints', 'shared', 'd2'), 'truncated? no: longer');
    const skipped: number[] = [];
    expect((await storage.latestComplete((id) => skipped.push(id)))?.checkpointId).toBe(1);
    expect(skipped).toEqual([2]);
    await rm(join(root, 'checkpoints', 'shared', 'base'));
    expect(await storage.latestComplete()).toBeUndefined();
  });

  it('a savepoint copies its shared files and restores from its own folder', async () => {
    const base = await putShared('base', 'B');
    const metadata = await commit(7, [base], true);
    const savepoints = new FileSavepointStorage(join(root, 'savepoints'));
    const dir = await savepoints.write(metadata, storage);
    expect(existsSync(join(dir, 'shared', 'base'))).toBe(true);
    // The checkpoint's own copy may go; the savepoint is self-contained.
    await storage.discard(7);
    await rm(join(root, 'checkpoints', 'shared'), { recursive: true });
    const snapshotDir = new SnapshotDirectory(dir);
    const read = await snapshotDir.readMetadata();
    await snapshotDir.verifyTaskFiles(read);
    await snapshotDir.sharedState.get(base, join(root, 'out'));
    expect(await readFile(join(root, 'out'), 'utf8')).toBe('B');
  });

  it('metadata refuses shared file entries outside the shared folder', () => {
    const task = { task: { vertex: 0, subtask: 0 }, vertexName: 'K', path: 'chk-0000000001/task-0-0.state', bytes: 1, sha256: 'a'.repeat(64) };
    const metadata = { version: CHECKPOINT_FORMAT_VERSION, checkpointId: 1, savepoint: false, triggeredAt: 1, completedAt: 2, maxParallelism: 8, parallelism: { 0: 1 } };
    const good = encodeMetadata({ ...metadata, tasks: [{ ...task, sharedFiles: [{ path: 'shared/f', bytes: 1, sha256: 'b'.repeat(64) }] }] });
    expect(decodeMetadata(good, 'm', 1).tasks[0]?.sharedFiles).toHaveLength(1);
    const bad = encodeMetadata({ ...metadata, tasks: [{ ...task, sharedFiles: [{ path: '../etc/passwd', bytes: 1, sha256: 'b'.repeat(64) }] }] });
    expect(() => decodeMetadata(bad, 'm', 1)).toThrow(CheckpointCorruptError);
  });
});
