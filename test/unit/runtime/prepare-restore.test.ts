import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamEnvironment, collectSink, ConfigError } from '../../../lib/index.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata } from '../../../lib/checkpoint/types.ts';
import { FileCheckpointStorage, FileSavepointStorage, encodeTaskSnapshot } from '../../../lib/storage/index.ts';
import { prepareCheckpointing, restoreReader, restoredFromLine } from '../../../lib/runtime/restore/prepare-checkpointing.ts';

let root: string;
let plan: PhysicalPlan;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-prepare-'));
  const env = new StreamEnvironment({ parallelism: 1 });
  env.fromCollection([1, 2, 3]).map((x) => x).sinkTo(collectSink());
  plan = buildPhysicalPlan(env.graph, env.options);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Writes checkpoint `id` of `plan` into `dir` (complete), or as a savepoint into `dir/savepoints`; returns its metadata and savepoint path. */
async function snapshot(dir: string, id: number, savepoint: boolean, maxParallelism = plan.maxParallelism): Promise<{ metadata: CheckpointMetadata; path?: string }> {
  const storage = new FileCheckpointStorage(dir);
  const vertex = plan.vertices[0]!;
  const task = { vertex: vertex.id, subtask: 0 };
  const written = await storage.writeTaskState(id, taskStateFileName(task), encodeTaskSnapshot({ ...task, operators: [] }));
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint,
    triggeredAt: 1000 + id,
    completedAt: 1001 + id,
    maxParallelism,
    parallelism: { [vertex.id]: 1 },
    tasks: [{ task, vertexName: vertex.name, ...written }],
  };
  if (!savepoint) {
    await storage.commitMetadata(metadata);
    return { metadata };
  }
  const path = await new FileSavepointStorage(join(dir, 'savepoints')).write(metadata, storage);
  await storage.discard(id);
  return { metadata, path };
}

const config = (dir: string, extra: { restore?: string; fresh?: boolean; allowReplay?: boolean } = {}) => ({ dir, intervalMs: 1000, ...extra });

/** Damages the task state file of checkpoint `id` in `dir`. */
const corrupt = (dir: string, id: number) => appendFile(join(dir, `chk-${String(id).padStart(10, '0')}`, taskStateFileName({ vertex: 0, subtask: 0 })), 'garbage');

describe('prepareCheckpointing with savepoints', () => {
  it('starts from --restore, records it, and resumes from the restored job`s own checkpoints once there are some', async () => {
    const { path } = await snapshot(join(root, 'old'), 13, true);
    const dir = join(root, 'new');
    await snapshot(dir, 20, false); // an older job's checkpoint in the folder: never resumed from
    const logs: string[] = [];
    const first = await prepareCheckpointing(config(dir, { restore: path }), plan, (l) => logs.push(l));
    expect(first.latest?.checkpointId).toBe(13);
    expect(first.external?.location).toBe(path);
    expect(restoredFromLine(first, first.latest!)).toBe(`restored from savepoint ${path}`);
    expect(restoreReader(first, first.latest!)).toBe(first.external?.reader);
    expect(first.restartFloor).toBe(20);
    expect(JSON.parse(await readFile(join(dir, 'restore.json'), 'utf8'))).toEqual({ source: path, checkpointId: 13, floor: 20 });

    // Interrupted before a checkpoint of its own: the savepoint again, with --restore or without.
    expect((await prepareCheckpointing(config(dir, { restore: path }), plan, () => {})).latest?.checkpointId).toBe(13);
    const again: string[] = [];
    expect((await prepareCheckpointing(config(dir), plan, (l) => again.push(l))).external?.location).toBe(path);
    expect(again.join('\n')).toContain(`continuing from it`);

    // Its first checkpoint completed: from then on, that one.
    await snapshot(dir, 21, false);
    const resumed = await prepareCheckpointing(config(dir, { restore: path }), plan, () => {});
    expect(resumed.latest?.checkpointId).toBe(21);
    expect(resumed.external).toBeUndefined();
    expect(restoredFromLine(resumed, resumed.latest!)).toBe('restored from checkpoint 21');
    expect((await prepareCheckpointing(config(dir), plan, () => {})).latest?.checkpointId).toBe(21);
  });

  it('--fresh with --restore discards the folder and restores again; --fresh alone forgets the restore', async () => {
    const { path } = await snapshot(join(root, 'old'), 5, true);
    const dir = join(root, 'new');
    await prepareCheckpointing(config(dir, { restore: path }), plan, () => {});
    await snapshot(dir, 6, false);
    const again = await prepareCheckpointing(config(dir, { restore: path, fresh: true }), plan, () => {});
    expect(again.latest?.checkpointId).toBe(5);
    expect(await again.storage.list()).toEqual([]);
    const fresh = await prepareCheckpointing(config(dir, { fresh: true }), plan, () => {});
    expect(fresh.latest).toBeUndefined();
    expect(existsSync(join(dir, 'restore.json'))).toBe(false);
  });

  it('restores a chk-* directory of another folder, named as a checkpoint', async () => {
    await snapshot(join(root, 'old'), 8, false);
    const chk = join(root, 'old', 'chk-0000000008');
    const prepared = await prepareCheckpointing(config(join(root, 'new'), { restore: chk }), plan, () => {});
    expect(restoredFromLine(prepared, prepared.latest!)).toBe(`restored from checkpoint 8 (${chk})`);
  });

  it('refuses another maxParallelism, a folder instead of a savepoint, and a missing one, leaving no record', async () => {
    const { path } = await snapshot(join(root, 'old'), 3, true, 64);
    const dir = join(root, 'new');
    await expect(prepareCheckpointing(config(dir, { restore: path }), plan, () => {})).rejects.toThrow(
      /it was taken with maxParallelism 64 but the job now has 128.*run with --max-parallelism 64/s,
    );
    expect(existsSync(join(dir, 'restore.json'))).toBe(false);
    await expect(prepareCheckpointing(config(dir, { restore: join(root, 'old', 'savepoints') }), plan, () => {})).rejects.toThrow(
      /this folder holds checkpoints or savepoints, not one of them; pass one directory, e\.g\. .*savepoint-0000000003-1003/,
    );
    await expect(prepareCheckpointing(config(dir, { restore: join(root, 'gone') }), plan, () => {})).rejects.toThrow(ConfigError);
  });

  it('says which record points at a savepoint that is gone', async () => {
    const { path } = await snapshot(join(root, 'old'), 4, true);
    const dir = join(root, 'new');
    await prepareCheckpointing(config(dir, { restore: path! }), plan, () => {});
    await rm(path!, { recursive: true });
    await expect(prepareCheckpointing(config(dir), plan, () => {})).rejects.toThrow(/restore\.json in .* says the job continues from it/);
  });
});

describe('prepareCheckpointing with corrupt checkpoints', () => {
  it('refuses to fall back past a corrupt checkpoint, naming it and what would be replayed, unless --allow-replay', async () => {
    const dir = join(root, 'ckpt');
    for (const id of [11, 12, 13]) await snapshot(dir, id, false);
    await corrupt(dir, 12);
    await corrupt(dir, 13);
    const refused = prepareCheckpointing(config(dir), plan, () => {});
    await expect(refused).rejects.toThrow(ConfigError);
    await expect(refused).rejects.toThrow(
      /checkpoints 12, 13 in .* are corrupt:\n  checkpoint 12: checkpoint file .*chk-0000000012.* is unusable: .*\n  checkpoint 13: .*falling back to checkpoint 11 would replay the output committed by checkpoints 12, 13.*--allow-replay/s,
    );
    // The folder is left as it was: the user can still repair it.
    expect((await new FileCheckpointStorage(dir).list()).map((c) => c.checkpointId)).toEqual([13, 12, 11]);
    const logs: string[] = [];
    const accepted = await prepareCheckpointing(config(dir, { allowReplay: true }), plan, (l) => logs.push(l));
    expect(accepted.latest?.checkpointId).toBe(11);
    expect(logs.join('\n')).toMatch(/--allow-replay: checkpoints 12, 13 corrupt; falling back to checkpoint 11/);
  });

  it('never starts from the beginning when every checkpoint is corrupt, even with --allow-replay; --fresh does', async () => {
    const dir = join(root, 'ckpt');
    for (const id of [4, 5]) await snapshot(dir, id, false);
    await corrupt(dir, 4);
    await writeFile(join(dir, 'chk-0000000005', '_metadata'), 'not metadata');
    for (const allowReplay of [false, true]) {
      await expect(prepareCheckpointing(config(dir, { allowReplay }), plan, () => {})).rejects.toThrow(
        /checkpoints 4, 5 in .* are corrupt:.*checkpoint 5: checkpoint file .*_metadata is unusable.*start from the beginning and write again all output committed by checkpoints 4, 5.*--fresh/s,
      );
    }
    const fresh = await prepareCheckpointing(config(dir, { fresh: true }), plan, () => {});
    expect(fresh.latest).toBeUndefined();
    expect(fresh.lastCheckpointId).toBe(5);
  });

  it('refuses to go back to the restored savepoint past a corrupt checkpoint of the restored job', async () => {
    const { path } = await snapshot(join(root, 'old'), 3, true);
    const dir = join(root, 'new');
    await snapshot(dir, 2, false); // an older job's checkpoint, corrupt: below the floor, so it replays nothing
    await corrupt(dir, 2);
    await prepareCheckpointing(config(dir, { restore: path }), plan, () => {});
    await snapshot(dir, 4, false);
    await corrupt(dir, 4);
    await expect(prepareCheckpointing(config(dir), plan, () => {})).rejects.toThrow(
      /checkpoint 4 in .* is corrupt:.*falling back to savepoint .* \(restore\.json\) would replay the output committed by checkpoint 4/s,
    );
    const accepted = await prepareCheckpointing(config(dir, { allowReplay: true }), plan, () => {});
    expect(accepted.external?.location).toBe(path);
  });

  it('--fresh starts over when restore.json is damaged', async () => {
    const dir = join(root, 'ckpt');
    await snapshot(dir, 7, false);
    await writeFile(join(dir, 'restore.json'), '{"source": ');
    await expect(prepareCheckpointing(config(dir), plan, () => {})).rejects.toThrow(/restore\.json in .* is not a valid restore record/);
    const fresh = await prepareCheckpointing(config(dir, { fresh: true }), plan, () => {});
    expect(fresh.latest).toBeUndefined();
    expect(existsSync(join(dir, 'restore.json'))).toBe(false);
  });
});

describe('prepareCheckpointing and an earlier run still running', () => {
  it('fences the folder before removing anything, so the earlier run can no longer delete there', async () => {
    const dir = join(root, 'chk');
    const zombie = new FileCheckpointStorage(dir);
    const old = { attempt: 0, epoch: 3 };
    await zombie.fence(old);
    await zombie.writeTaskState(20, taskStateFileName({ vertex: 0, subtask: 0 }), Buffer.from('in flight'), old);
    const prepared = await prepareCheckpointing(config(dir), plan, () => {});
    expect((await prepared.storage.currentFence())!.epoch).toBeGreaterThan(old.epoch);
    expect(existsSync(join(dir, 'chk-0000000020'))).toBe(false);
    await snapshot(dir, 21, false);
    await expect(zombie.discard(21)).rejects.toMatchObject({ code: 'FENCED' });
    await expect(zombie.removeIncomplete()).rejects.toMatchObject({ code: 'FENCED' });
    await expect(zombie.writeTaskState(22, taskStateFileName({ vertex: 0, subtask: 0 }), Buffer.from('late'), old)).rejects.toMatchObject({ code: 'FENCED' });
    expect((await prepared.storage.latestComplete())?.checkpointId).toBe(21);
  });
});
