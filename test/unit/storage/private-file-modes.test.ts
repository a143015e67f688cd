import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeRestEndpoint, restEndpointPath } from '../../../lib/cli/rest-endpoint-file.ts';
import { taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata } from '../../../lib/checkpoint/types.ts';
import { FileCheckpointStorage, FileSavepointStorage, encodeTaskSnapshot } from '../../../lib/storage/index.ts';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-modes-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = async (path: string) => (await stat(path)).mode & 0o777;

/** Every file and folder under `dir` (itself included) with its permission bits, as `path: 0ooo`. */
async function modes(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = { '.': (await mode(dir)).toString(8) };
  for (const entry of await readdir(dir, { recursive: true })) found[entry] = (await mode(join(dir, entry))).toString(8);
  return found;
}

/** A checkpoint with one task that lists one shared file, the local copy of which was made world-readable. */
async function writeCheckpoint(storage: FileCheckpointStorage, id: number): Promise<CheckpointMetadata> {
  const local = join(root, `local-${id}.sst`);
  await writeFile(local, `sst ${id}`);
  await chmod(local, 0o644);
  const shared = await storage.sharedState.put(`00000${id}.sst`, local);
  const task = { vertex: 0, subtask: 0 };
  const written = await storage.writeTaskState(id, taskStateFileName(task), encodeTaskSnapshot({ vertex: 0, subtask: 0, operators: [] }));
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint: id === 2,
    triggeredAt: 1_700_000_000_000 + id,
    completedAt: 1_700_000_000_100 + id,
    maxParallelism: 128,
    parallelism: { 0: 1 },
    tasks: [{ task, vertexName: 'Source', ...written, sharedFiles: [shared] }],
  };
  await storage.commitMetadata(metadata);
  return metadata;
}

describe.skipIf(process.platform === 'win32')('checkpoint files are private to their owner', () => {
  it('writes checkpoint folders 0700 and their files (task state, metadata, shared state, job records) 0600', async () => {
    const dir = join(root, 'checkpoints');
    const storage = new FileCheckpointStorage(dir);
    await writeCheckpoint(storage, 1);
    await storage.records.write('restore.json', '{}');
    const found = await modes(dir);
    expect(Object.keys(found).sort()).toEqual(
      ['.', 'chk-0000000001', 'chk-0000000001/_metadata', 'chk-0000000001/task-0-0.state', 'restore.json', 'shared', 'shared/000001.sst'].sort(),
    );
    for (const [path, bits] of Object.entries(found)) {
      const isDir = (await stat(join(dir, path))).isDirectory();
      expect(bits, path).toBe(isDir ? '700' : '600');
    }
  });

  it('writes savepoint folders 0700 and their files 0600, shared state included', async () => {
    const checkpoints = new FileCheckpointStorage(join(root, 'checkpoints'));
    const metadata = await writeCheckpoint(checkpoints, 2);
    const savepointDir = join(root, 'savepoints');
    const path = await new FileSavepointStorage(savepointDir).write(metadata, checkpoints);
    const found = await modes(savepointDir);
    expect(Object.keys(found).length).toBeGreaterThanOrEqual(5);
    expect(Object.keys(found).some((p) => p.endsWith('.sst'))).toBe(true);
    for (const [entry, bits] of Object.entries(found)) {
      const isDir = (await stat(join(savepointDir, entry))).isDirectory();
      expect(bits, entry).toBe(isDir ? '700' : '600');
    }
    expect(path.startsWith(savepointDir)).toBe(true);
  });

  it('writes rest.json 0600 in a folder it creates 0700', async () => {
    const dir = join(root, 'new-checkpoint-dir');
    await writeRestEndpoint(dir, { url: 'http://127.0.0.1:1', pid: process.pid, jobId: 'j', jobName: 'n', startTime: 1 });
    expect((await mode(restEndpointPath(dir))).toString(8)).toBe('600');
    expect((await mode(dir)).toString(8)).toBe('700');
  });

  it('leaves the mode of a checkpoint folder the user made alone', async () => {
    const dir = join(root, 'mine');
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    await new FileCheckpointStorage(dir).records.write('restore.json', '{}');
    await writeRestEndpoint(dir, { url: 'http://127.0.0.1:1', pid: process.pid, jobId: 'j', jobName: 'n', startTime: 1 });
    expect((await mode(dir)).toString(8)).toBe('755');
    expect((await mode(join(dir, 'restore.json'))).toString(8)).toBe('600');
  });
});
