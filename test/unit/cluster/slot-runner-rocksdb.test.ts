import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSlotCommittables } from '../../../lib/cluster/slot-committables.ts';
import { SlotRunner } from '../../../lib/runtime/cluster/slot-runner.ts';
import { jobFolderName, prepareSlotDirs, slotFolder } from '../../../lib/runtime/cluster/slot-state-dirs.ts';
import { rocksDbServices } from '../../../lib/state/rocksdb/index.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { InMemoryControlTable } from '../../harness/cluster/in-memory-control.ts';
import { buildJob, clusterConfig, commitMetadata, Feeds, keysOfSlot, tempDir, until, type Row } from './slot-fixtures.ts';

const running: SlotRunner[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

describe('SlotRunner on RocksDB', () => {
  it('reuses the previous epoch database after a handoff at a completed checkpoint (restore local), else restores from storage', async () => {
    const feeds = new Feeds();
    const { plan, env } = buildJob(feeds);
    const store = new FsObjectStore(tempDir('sluice-slot-store-'));
    const table = new InMemoryControlTable();
    table.config = clusterConfig(plan, store.location);
    const stateRoot = tempDir('sluice-slot-state-');
    const tempRoot = tempDir('sluice-slot-temp-');
    const start = async (owner: string, roots: { stateRoot: string; tempRoot: string }) => {
      const { epoch } = table.take(0, owner);
      const dirs = await prepareSlotDirs({ ...roots, jobId: 'job-1', slot: 0, epoch });
      const runner = new SlotRunner({
        plan,
        jobOptions: env.options,
        config: table.config!,
        slot: 0,
        epoch,
        owner,
        store,
        acks: table,
        services: rocksDbServices({ stateDir: dirs.stateDir, tempDir: dirs.tempDir }),
        control: table.control,
        events: { acked() {}, fenced() {}, warn() {} },
      });
      running.push(runner);
      return { runner, dirs, started: await runner.start() };
    };
    const [a, b] = keysOfSlot(0, 2);
    const first = await start('w1', { stateRoot, tempRoot });
    expect(first.started.restore).toBe('fresh');
    feeds.rows[0]!.push({ k: a!, v: 1 }, { k: b!, v: 2 });
    await until(() => feeds.read[0] === 2, 'the first rows');
    table.trigger(1);
    first.runner.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    const handedOver = first.runner.stopAtNextCompletedCheckpoint();
    table.complete(1, await commitMetadata(store, plan, 1, [table.ack(1, 0)!]));
    first.runner.onControl(table.control);
    expect(await handedOver).toBe(1);

    // The next owner (the same host here) finds the database at checkpoint 1 under the new epoch.
    const second = await start('w2', { stateRoot, tempRoot });
    expect(second.dirs.carriedOver).toBe(true);
    expect(second.started).toMatchObject({ restore: 'local', checkpointId: 1 });
    expect(existsSync(first.dirs.stateDir)).toBe(false);
    expect(existsSync(first.dirs.tempDir)).toBe(false);
    feeds.rows[0]!.push({ k: a!, v: 10 });
    await until(() => feeds.read[0] === 3, 'the row after the handoff');
    await second.runner.stop();

    // Another worker with its own disk has no database: it reads the checkpoint's files, with the same state.
    feeds.read[0] = 0;
    const third = await start('w3', { stateRoot: tempDir('sluice-other-state-'), tempRoot: tempDir('sluice-other-temp-') });
    expect(third.started).toMatchObject({ restore: 's3', checkpointId: 1 });
    await until(() => feeds.read[0] === 3, 'the row after checkpoint 1, read again');
    table.trigger(2);
    third.runner.onControl(table.control);
    await until(() => table.ack(2, 0) !== undefined, 'the ack of checkpoint 2');
    const ack = table.ack(2, 0)!;
    if (ack.kind !== 'ack') throw new Error('expected an ack');
    const object = decodeSlotCommittables((await store.get(ack.committables!.path))!, ack.committables!.path);
    expect(object.sinks.flatMap((s) => s.committables.flatMap((c) => (c as { rows: Row[] }).rows))).toEqual([{ k: a, v: 11 }]);
  });
});

describe('prepareSlotDirs', () => {
  it('moves the newest lower epoch of its own slot to the new epoch and deletes only lower epochs of that slot', async () => {
    const stateRoot = tempDir('sluice-dirs-state-');
    const tempRoot = tempDir('sluice-dirs-temp-');
    const make = (root: string, slot: number, epoch: number, marker: string) => {
      const dir = join(slotFolder(root, 'job-1', slot), `e${epoch}`, 'op-0');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, marker), marker);
    };
    for (const epoch of [1, 2, 5]) make(stateRoot, 0, epoch, `state-${epoch}`);
    for (const epoch of [1, 2, 5]) make(tempRoot, 0, epoch, `temp-${epoch}`);
    make(stateRoot, 1, 1, 'other-slot');
    make(tempRoot, 1, 1, 'other-slot');
    const dirs = await prepareSlotDirs({ stateRoot, tempRoot, jobId: 'job-1', slot: 0, epoch: 3 });
    expect(dirs.carriedOver).toBe(true);
    expect(readdirSync(slotFolder(stateRoot, 'job-1', 0)).sort()).toEqual(['e3', 'e5']);
    expect(readdirSync(join(dirs.stateDir, 'op-0'))).toEqual(['state-2']);
    // Temp files are never carried over: lower epochs are deleted, the higher one (a newer owner's) is kept.
    expect(readdirSync(slotFolder(tempRoot, 'job-1', 0)).sort()).toEqual(['e3', 'e5']);
    expect(readdirSync(dirs.tempDir)).toEqual([]);
    expect(readdirSync(join(slotFolder(stateRoot, 'job-1', 1), 'e1', 'op-0'))).toEqual(['other-slot']);
    expect(readdirSync(join(slotFolder(tempRoot, 'job-1', 1), 'e1', 'op-0'))).toEqual(['other-slot']);
  });

  it('never shares a slot folder between two jobs whose ids differ only in characters a folder name cannot hold', async () => {
    const stateRoot = tempDir('sluice-dirs-state-');
    const tempRoot = tempDir('sluice-dirs-temp-');
    const first = await prepareSlotDirs({ stateRoot, tempRoot, jobId: 'orders/eu', slot: 0, epoch: 7 });
    writeFileSync(join(first.stateDir, 'live'), 'live');
    const second = await prepareSlotDirs({ stateRoot, tempRoot, jobId: 'orders_eu', slot: 0, epoch: 9 });
    expect(second.carriedOver).toBe(false);
    expect(readdirSync(first.stateDir)).toEqual(['live']);
    expect(slotFolder(stateRoot, 'orders/eu', 0)).not.toBe(slotFolder(stateRoot, 'orders_eu', 0));
    expect(slotFolder(stateRoot, '.x', 0)).not.toBe(slotFolder(stateRoot, 'x', 0));
    expect(slotFolder(stateRoot, `${'a'.repeat(80)}1`, 0)).not.toBe(slotFolder(stateRoot, `${'a'.repeat(80)}2`, 0));
    expect(jobFolderName('orders/eu')).toMatch(/^orders_eu-[0-9a-f]{16}$/);
  });

  it('starts empty without a lower epoch', async () => {
    const dirs = await prepareSlotDirs({ stateRoot: tempDir('sluice-dirs-'), tempRoot: tempDir('sluice-dirs-'), jobId: 'j', slot: 2, epoch: 1 });
    expect(dirs.carriedOver).toBe(false);
    expect(readdirSync(dirs.stateDir)).toEqual([]);
  });
});
