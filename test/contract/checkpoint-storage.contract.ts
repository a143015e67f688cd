import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metadataPath, taskStateFileName } from '../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata, type SharedFileEntry, type TaskStateHandle } from '../../lib/checkpoint/types.ts';
import { FencedError, InternalError, type FencingToken } from '../../lib/core/index.ts';
import { CheckpointCorruptError, ObjectCheckpointStorage, type CheckpointStorage } from '../../lib/storage/index.ts';
import type { ObjectStore } from '../../lib/storage/object-store.ts';

/** A storage on a fresh, empty location and the object store under it (to damage or inspect objects directly). */
export interface StorageUnderTest {
  readonly storage: CheckpointStorage;
  readonly store: ObjectStore;
}

interface WriteOptions {
  readonly commit?: boolean;
  readonly savepoint?: boolean;
  readonly shared?: readonly SharedFileEntry[];
  readonly fencing?: FencingToken;
  readonly tag?: string;
}

async function writeCheckpoint(storage: CheckpointStorage, id: number, options: WriteOptions = {}): Promise<CheckpointMetadata> {
  const tasks: TaskStateHandle[] = [];
  for (const subtask of [0, 1]) {
    const task = { vertex: 1, subtask };
    const data = Buffer.from(`state of ${id}/${subtask}${options.tag ?? ''}`);
    const written = await storage.writeTaskState(id, taskStateFileName(task), data, options.fencing);
    tasks.push({ task, vertexName: 'Window', ...written, ...(subtask === 0 && options.shared ? { sharedFiles: options.shared } : {}) });
  }
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint: options.savepoint ?? false,
    triggeredAt: 1000 * id,
    completedAt: 1000 * id + 5,
    maxParallelism: 128,
    parallelism: { 0: 1, 1: 2 },
    tasks,
    ...(options.fencing === undefined ? {} : { fencing: options.fencing }),
  };
  if (options.commit !== false) await storage.commitMetadata(metadata);
  return metadata;
}

async function ids(storage: CheckpointStorage): Promise<number[]> {
  return (await storage.list()).map((c) => c.checkpointId);
}

/** Every object's path and bytes, to show that a refused request changed nothing. */
async function contents(store: ObjectStore): Promise<Map<string, string>> {
  const all = new Map<string, string>();
  for (const path of (await store.list('')).sort()) all.set(path, Buffer.from((await store.get(path)) ?? []).toString('hex'));
  return all;
}

/**
 * What every CheckpointStorage must do, whatever is under it (see lib/storage/checkpoint-storage.ts): run on the
 * filesystem storage and on the S3 storage (emulator) in each commit mode.
 */
export function checkpointStorageContract(name: string, make: () => Promise<StorageUnderTest>): void {
  describe(`CheckpointStorage contract: ${name}`, () => {
    let local: string;
    beforeAll(async () => {
      local = await mkdtemp(join(tmpdir(), 'sluice-storage-contract-'));
    });
    afterAll(async () => {
      await rm(local, { recursive: true, force: true });
    });

    async function putShared(storage: CheckpointStorage, name: string, content: string): Promise<SharedFileEntry> {
      const file = join(local, `${randomBytes(4).toString('hex')}-${name}`);
      await writeFile(file, content);
      return storage.sharedState.put(name, file);
    }

    it('starts empty', async () => {
      const { storage } = await make();
      expect(await storage.list()).toEqual([]);
      expect(await storage.latestComplete()).toBeUndefined();
      expect(await storage.removeIncomplete()).toEqual([]);
      expect(await storage.currentFence()).toBeUndefined();
    });

    it('commits, lists newest first, restores the newest and reads its task files back verified', async () => {
      const { storage } = await make();
      const metadata = [];
      for (const id of [1, 2, 3]) metadata.push(await writeCheckpoint(storage, id));
      expect(await ids(storage)).toEqual([3, 2, 1]);
      const latest = await storage.latestComplete();
      expect(latest).toEqual(metadata[2]);
      const handle = latest?.tasks[1];
      expect(Buffer.from(await storage.readTaskState(handle!.path, handle!)).toString()).toBe('state of 3/1');
    });

    it('does not list a checkpoint without a commit, and removeIncomplete deletes it and its files', async () => {
      const { storage, store } = await make();
      await writeCheckpoint(storage, 1);
      const crashed = await writeCheckpoint(storage, 2, { commit: false });
      expect(await ids(storage)).toEqual([1]);
      expect((await storage.latestComplete())?.checkpointId).toBe(1);
      expect(await storage.removeIncomplete()).toEqual([2]);
      expect(await store.list('chk-0000000002')).toEqual([]);
      await expect(storage.readTaskState(crashed.tasks[0]!.path, crashed.tasks[0]!)).rejects.toBeInstanceOf(CheckpointCorruptError);
      expect(await ids(storage)).toEqual([1]);
    });

    it('refuses to commit an id that is complete with other metadata, and keeps the first', async () => {
      const { storage } = await make();
      const first = await writeCheckpoint(storage, 1);
      await expect(storage.commitMetadata({ ...first, completedAt: first.completedAt + 1 })).rejects.toBeInstanceOf(InternalError);
      expect(await storage.latestComplete()).toEqual(first);
    });

    it('skips a checkpoint whose task file was altered (same size) or removed, and restores the one before', async () => {
      const { storage, store } = await make();
      await writeCheckpoint(storage, 1);
      const second = await writeCheckpoint(storage, 2);
      const third = await writeCheckpoint(storage, 3);
      const altered = Buffer.from((await store.get(third.tasks[0]!.path)) ?? []);
      altered[0] = altered[0]! ^ 0xff;
      await store.put(third.tasks[0]!.path, altered);
      await store.delete([second.tasks[1]!.path]);
      const skipped: number[] = [];
      expect((await storage.latestComplete((id) => skipped.push(id)))?.checkpointId).toBe(1);
      expect(skipped).toEqual([3, 2]);
      await expect(storage.readTaskState(third.tasks[0]!.path, third.tasks[0]!)).rejects.toBeInstanceOf(CheckpointCorruptError);
    });

    it('reports altered metadata as corrupt rather than complete', async () => {
      const { storage, store } = await make();
      await writeCheckpoint(storage, 1);
      await writeCheckpoint(storage, 2);
      const path = metadataPath({ kind: 'checkpoint', checkpointId: 2 });
      const bytes = Buffer.from((await store.get(path)) ?? []);
      bytes[10] = bytes[10]! ^ 0xff;
      await store.put(path, bytes);
      expect((await storage.list()).map((c) => c.status)).toEqual(['corrupt', 'complete']);
      expect((await storage.latestComplete())?.checkpointId).toBe(1);
    });

    it('retention keeps the newest N complete checkpoints, savepoints and the shared files they list', async () => {
      const { storage } = await make();
      const old = await putShared(storage, '000001.sst', 'old');
      const kept = await putShared(storage, '000002.sst', 'kept');
      await writeCheckpoint(storage, 1, { shared: [old] });
      await writeCheckpoint(storage, 2, { savepoint: true, shared: [old] });
      await writeCheckpoint(storage, 3, { shared: [old] });
      await writeCheckpoint(storage, 4, { shared: [kept] });
      await writeCheckpoint(storage, 5, { shared: [kept] });
      expect(await storage.applyRetention(2)).toEqual([1, 3]);
      expect(await ids(storage)).toEqual([5, 4, 2]);
      // The savepoint still lists the old file.
      await storage.sharedState.get(old, join(local, `old-${randomBytes(4).toString('hex')}`));
      await storage.discard(2);
      await storage.discard(2);
      // discard leaves shared files; the start-up clean-up removes the ones no checkpoint lists any more.
      await storage.removeIncomplete();
      await expect(storage.sharedState.get(old, join(local, `gone-${randomBytes(4).toString('hex')}`))).rejects.toBeInstanceOf(
        CheckpointCorruptError,
      );
      await storage.sharedState.get(kept, join(local, `kept-${randomBytes(4).toString('hex')}`));
      expect((await storage.latestComplete())?.checkpointId).toBe(5);
    });

    it('removeIncomplete deletes shared files no complete checkpoint lists', async () => {
      const { storage, store } = await make();
      const listed = await putShared(storage, '000001.sst', 'listed');
      await putShared(storage, '000009.sst', 'orphan');
      await writeCheckpoint(storage, 1, { shared: [listed] });
      await storage.removeIncomplete();
      expect(await store.list('shared')).toEqual([listed.path]);
    });

    it('keeps job records, replaced whole', async () => {
      const { storage } = await make();
      expect(await storage.records.read('restore.json')).toBeUndefined();
      await storage.records.write('restore.json', '{"a":1}');
      await storage.records.write('restore.json', '{"a":2}');
      expect(await storage.records.read('restore.json')).toBe('{"a":2}');
      await writeCheckpoint(storage, 1);
      expect(await ids(storage)).toEqual([1]);
      await storage.records.remove('restore.json');
      await storage.records.remove('restore.json');
      expect(await storage.records.read('restore.json')).toBeUndefined();
    });

    it('fencing: once epoch 1 fences, a zombie of epoch 0 can neither write task state nor commit, and changes nothing', async () => {
      const { storage, store } = await make();
      const zombie = { attempt: 0, epoch: 0 };
      const current = { attempt: 1, epoch: 1 };
      await storage.fence(zombie);
      await writeCheckpoint(storage, 1, { fencing: zombie });
      await storage.fence(current);
      expect(await storage.currentFence()).toEqual(current);
      await writeCheckpoint(storage, 2, { fencing: current });
      const before = await contents(store);

      await expect(writeCheckpoint(storage, 2, { fencing: zombie, commit: false, tag: ' (zombie)' })).rejects.toBeInstanceOf(FencedError);
      await expect(writeCheckpoint(storage, 3, { fencing: zombie, commit: false })).rejects.toBeInstanceOf(FencedError);
      const handles = (await storage.latestComplete())!.tasks;
      await expect(storage.commitMetadata({ ...(await storage.latestComplete())!, checkpointId: 3, fencing: zombie, tasks: handles })).rejects.toBeInstanceOf(
        FencedError,
      );
      await expect(storage.fence(zombie)).rejects.toBeInstanceOf(FencedError);
      expect(await contents(store)).toEqual(before);
      expect(await ids(storage)).toEqual([2, 1]);
      expect(await storage.currentFence()).toEqual(current);

      // A later attempt fences above and carries on.
      const next = { attempt: 2, epoch: 2 };
      await storage.fence(next);
      await writeCheckpoint(storage, 3, { fencing: next });
      expect(await ids(storage)).toEqual([3, 2, 1]);
      await expect(storage.fence(current)).rejects.toBeInstanceOf(FencedError);
    });

    it('fencing: a superseded coordinator can delete nothing (discard, removeIncomplete, retention) once a newer epoch fences', async () => {
      const { storage, store } = await make();
      // The old run's coordinator: its own catalog over the same location, fenced with the old epoch.
      const zombie = new ObjectCheckpointStorage(store);
      const old = { attempt: 0, epoch: 5 };
      await zombie.fence(old);
      await writeCheckpoint(zombie, 20, { fencing: old, commit: false });
      // The new run owns the location now; its checkpoints reuse ids the old run will also try.
      const owner = { attempt: 0, epoch: 6 };
      await storage.fence(owner);
      await storage.removeIncomplete();
      await writeCheckpoint(storage, 21, { fencing: owner });
      await writeCheckpoint(storage, 22, { fencing: owner });
      await writeCheckpoint(storage, 23, { fencing: owner, commit: false });
      const before = await contents(store);

      await expect(zombie.discard(21)).rejects.toBeInstanceOf(FencedError);
      await expect(zombie.discard(23)).rejects.toBeInstanceOf(FencedError);
      await expect(zombie.removeIncomplete()).rejects.toBeInstanceOf(FencedError);
      await expect(zombie.applyRetention(1)).rejects.toBeInstanceOf(FencedError);
      expect(await contents(store)).toEqual(before);
      expect(await ids(storage)).toEqual([22, 21]);

      // The owner's own clean-up still works.
      await storage.applyRetention(1);
      expect(await ids(storage)).toEqual([22]);
      await storage.discard(23);
    });

    it('fencing: a zombie whose fence read predates the raise writes beside the new owner`s task file of the same id, not over it', async () => {
      const { storage, store } = await make();
      const zombie = new ObjectCheckpointStorage(store);
      const old = { attempt: 0, epoch: 7 };
      await zombie.fence(old);
      // The zombie's store reads the fence for checkpoint 30 now (once per id), before the new owner raises it.
      await zombie.writeTaskState(30, taskStateFileName({ vertex: 2, subtask: 0 }), Buffer.from('zombie other task'), old);
      const owner = { attempt: 0, epoch: 8 };
      await storage.fence(owner);
      const committed = await writeCheckpoint(storage, 30, { fencing: owner });
      const late = await zombie.writeTaskState(30, taskStateFileName({ vertex: 1, subtask: 0 }), Buffer.from('zombie state of 30/0'), old);
      expect(committed.tasks.map((t) => t.path)).not.toContain(late.path);
      const latest = await storage.latestComplete();
      expect(latest?.checkpointId).toBe(30);
      const handle = latest!.tasks[0]!;
      expect(Buffer.from(await storage.readTaskState(handle.path, handle)).toString()).toBe('state of 30/0');
    });

    it('fencing: checkpoints whose task files carry no epoch (written before fencing) still restore and are still removed', async () => {
      const { storage } = await make();
      await writeCheckpoint(storage, 1);
      await writeCheckpoint(storage, 2, { commit: false });
      const latest = await storage.latestComplete();
      expect(latest?.tasks.map((t) => t.path)).toEqual(['chk-0000000001/task-1-0.state', 'chk-0000000001/task-1-1.state']);
      expect(Buffer.from(await storage.readTaskState(latest!.tasks[1]!.path, latest!.tasks[1]!)).toString()).toBe('state of 1/1');
      expect(await storage.removeIncomplete()).toEqual([2]);
      await writeCheckpoint(storage, 3, { fencing: { attempt: 0, epoch: 1 } });
      expect(await storage.applyRetention(1)).toEqual([1]);
      expect(await ids(storage)).toEqual([3]);
    });

    it('fencing: of two attempts raising at once, the higher epoch owns the location', async () => {
      const { storage } = await make();
      const results = await Promise.allSettled([storage.fence({ attempt: 0, epoch: 4 }), storage.fence({ attempt: 0, epoch: 3 })]);
      expect(results[0]!.status).toBe('fulfilled');
      expect(await storage.currentFence()).toEqual({ attempt: 0, epoch: 4 });
      await expect(storage.fence({ attempt: 1, epoch: 3 })).rejects.toBeInstanceOf(FencedError);
      await storage.fence({ attempt: 1, epoch: 4 });
      expect((await storage.currentFence())?.epoch).toBe(4);
    });
  });
}
