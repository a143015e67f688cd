import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { decodeSlotCommittables } from '../../../lib/cluster/slot-committables.ts';
import { memoryServices } from '../../../lib/runtime/default-services.ts';
import { SlotRunner, type SlotRunnerInit } from '../../../lib/runtime/cluster/slot-runner.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { decodeMetadata, encodeMetadata } from '../../../lib/storage/metadata-codec.ts';
import { join } from 'node:path';
import { committingSink } from '../../harness/committing-sink.ts';
import { InMemoryControlTable } from '../../harness/cluster/in-memory-control.ts';
import { buildJob, clusterConfig, commitMetadata, Feeds, keysOfSlot, MAX_P, P, tempDir, until, type Row } from './slot-fixtures.ts';

const running: SlotRunner[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

function setup() {
  const feeds = new Feeds();
  const { plan, env } = buildJob(feeds);
  const store = new FsObjectStore(tempDir('sluice-slot-'));
  const table = new InMemoryControlTable();
  table.config = clusterConfig(plan, store.location);
  const events = { acked: [] as string[], fenced: [] as string[], warnings: [] as string[] };
  const runner = (slot: number, epoch: number, extra: Partial<SlotRunnerInit> = {}): SlotRunner => {
    const r = new SlotRunner({
      plan,
      jobOptions: env.options,
      config: table.config!,
      slot,
      epoch,
      owner: 'w1',
      store,
      acks: table,
      services: memoryServices(),
      control: table.control,
      events: {
        acked: (item) => events.acked.push(`${item.kind} ${item.checkpointId}#${item.slot}`),
        fenced: (what, id) => events.fenced.push(`${what} ${id}`),
        warn: (line) => events.warnings.push(line),
      },
      ...extra,
    });
    running.push(r);
    return r;
  };
  return { feeds, plan, store, table, events, runner };
}

async function committablesOf(store: FsObjectStore, path: string): Promise<Row[]> {
  const bytes = await store.get(path);
  const object = decodeSlotCommittables(bytes!, path);
  return object.sinks.flatMap((s) => s.committables.flatMap((c) => (c as { rows: Row[] }).rows));
}

describe('SlotRunner', () => {
  it('injects a trigger at its sources and puts one ack item with every task handle and the committables object', async () => {
    const { feeds, plan, store, table, runner } = setup();
    const held = table.take(1, 'w1');
    const slot = runner(1, held.epoch);
    const started = await slot.start();
    expect(started.restore).toBe('fresh');
    const [a, b] = keysOfSlot(1, 2);
    feeds.rows[1]!.push({ k: a!, v: 1 }, { k: b!, v: 10 }, { k: a!, v: 2 });
    await until(() => feeds.read[1] === 3, 'the slot to read its rows');
    table.trigger(1);
    slot.onControl(table.control);
    await until(() => table.ack(1, 1) !== undefined, 'the ack of checkpoint 1');
    const ack = table.ack(1, 1)!;
    if (ack.kind !== 'ack') throw new Error(`expected an ack, got ${ack.kind}`);
    expect(ack.owner).toBe('w1');
    expect(ack.epoch).toBe(held.epoch);
    expect(ack.handles.map((h) => h.task)).toEqual(plan.vertices.map((v) => ({ vertex: v.id, subtask: 1 })));
    for (const h of ack.handles) expect(h.path).toMatch(new RegExp(`task-${h.task.vertex}-1-e${held.epoch}\\.state$`));
    expect(ack.committables?.path).toBe(`chk-0000000001/committables-1-e${held.epoch}.json`);
    expect(await committablesOf(store, ack.committables!.path)).toEqual([
      { k: a, v: 1 },
      { k: b, v: 10 },
      { k: a, v: 3 },
    ]);
    // Nothing was committed by the runtime (the sink's committer throws), and completion reaches the source.
    table.complete(1, await commitMetadata(store, plan, 1, [ack]));
    slot.onControl(table.control);
    await until(() => feeds.completions[1]!.includes(1), 'completion of checkpoint 1 at the source');
    // The same trigger seen again is not injected again: still exactly one ack, no refusal.
    slot.onControl(table.control);
    expect([...table.acks.keys()]).toEqual(['1#1']);
  });

  it('carries the committables of an aborted checkpoint and of a plain savepoint into the next checkpoint until one completes', async () => {
    const { feeds, plan, store, table, runner } = setup();
    const [a, b] = keysOfSlot(0, 2);
    const slot = runner(0, table.take(0, 'w1').epoch);
    await slot.start();
    const rowsOf = async (id: number): Promise<Row[]> => {
      await until(() => table.ack(id, 0) !== undefined, `the ack of checkpoint ${id}`);
      const ack = table.ack(id, 0)!;
      if (ack.kind !== 'ack') throw new Error(`expected an ack, got ${ack.kind}`);
      return committablesOf(store, ack.committables!.path);
    };
    const step = async (row: Row, read: number, id: number, savepoint = false): Promise<Row[]> => {
      feeds.rows[0]!.push(row);
      await until(() => feeds.read[0] === read, `row ${read}`);
      table.trigger(id, { savepoint });
      slot.onControl(table.control);
      return rowsOf(id);
    };
    // Checkpoint 1 aborts (the coordinator never completes it); savepoint 2 is written but does not move `completed`.
    expect(await step({ k: a!, v: 1 }, 1, 1)).toEqual([{ k: a, v: 1 }]);
    expect(await step({ k: b!, v: 10 }, 2, 2, true)).toEqual([{ k: a, v: 1 }, { k: b, v: 10 }]);
    // Checkpoint 3 completes: its committables hold every row since the last completed checkpoint.
    const third = await step({ k: a!, v: 2 }, 3, 3);
    expect(third).toEqual([{ k: a, v: 1 }, { k: b, v: 10 }, { k: a, v: 3 }]);
    table.complete(3, await commitMetadata(store, plan, 3, [table.ack(3, 0)!]));
    slot.onControl(table.control);
    await until(() => feeds.completions[0]!.includes(3), 'completion of checkpoint 3');
    // Once completed, they are no longer carried.
    expect(await step({ k: b!, v: 5 }, 4, 4)).toEqual([{ k: b, v: 15 }]);
  });

  it('injects a trigger written after its take, and skips one written before it', async () => {
    const { table, runner } = setup();
    table.trigger(1);
    // Taken after trigger 1: that checkpoint cannot commit (the generation moved), so the slot skips it.
    const first = runner(0, table.take(0, 'w1').epoch, { control: table.control });
    await first.start();
    // Trigger 2 is written after slot 1's take: present when slot 1 starts, and still committable.
    const held = table.take(1, 'w1');
    table.trigger(2);
    const second = runner(1, held.epoch, { control: table.control });
    await second.start();
    first.onControl(table.control);
    second.onControl(table.control);
    await until(() => table.ack(2, 0) !== undefined && table.ack(2, 1) !== undefined, 'the acks of checkpoint 2');
    // Acks are put in checkpoint order: slot 0 never acked checkpoint 1.
    expect(table.ack(1, 0)).toBeUndefined();
  });

  it('retries an ack put that failed, and still stops on a refused one', async () => {
    const { table, runner, events } = setup();
    let failures = 2;
    const flaky = {
      putAck: (item: Parameters<InMemoryControlTable['putAck']>[0]) =>
        failures-- > 0 ? Promise.reject(new Error('TransactionConflict')) : table.putAck(item),
    };
    const held = table.take(0, 'w1');
    const slot = runner(0, held.epoch, { acks: flaky });
    await slot.start();
    table.trigger(1);
    slot.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1 after two failed puts');
    expect(events.warnings.filter((w) => w.includes('checkpoint 1 not acknowledged'))).toHaveLength(2);
    expect(events.acked).toEqual(['ack 1#0']);
    // A refusal is not retried: the slot stops.
    failures = 1;
    table.take(0, 'w2');
    table.trigger(2);
    slot.onControl(table.control);
    await slot.done;
    expect(events.fenced).toEqual(['ack 2']);
  });

  it('stops when its ack is refused because the lease moved on, and writes nothing more', async () => {
    const { feeds, table, events, runner } = setup();
    const held = table.take(0, 'w1');
    const slot = runner(0, held.epoch);
    await slot.start();
    feeds.rows[0]!.push({ k: keysOfSlot(0, 1)[0]!, v: 5 });
    await until(() => feeds.read[0] === 1, 'the slot to read');
    table.take(0, 'w2');
    table.trigger(1);
    slot.onControl(table.control);
    await until(() => events.fenced.length > 0, 'the refused ack');
    expect(events.fenced).toEqual(['ack 1']);
    expect(table.refused.map((a) => `${a.owner}@${a.epoch}`)).toEqual([`w1@${held.epoch}`]);
    expect(table.acks.size).toBe(0);
    await slot.done;
    // A later trigger is ignored: the slot stopped.
    table.trigger(2);
    slot.onControl(table.control);
    expect(table.refused).toHaveLength(1);
  });

  it('restores only its own task files of the completed checkpoint at a new epoch and continues exactly', async () => {
    const { feeds, plan, store, table, runner } = setup();
    const [a, b] = keysOfSlot(0, 2);
    const first = runner(0, table.take(0, 'w1').epoch);
    await first.start();
    feeds.rows[0]!.push({ k: a!, v: 1 }, { k: b!, v: 2 });
    await until(() => feeds.read[0] === 2, 'the first rows');
    table.trigger(1);
    first.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    // Slot 1 never acked: the metadata lists only slot 0's tasks, which is all slot 0 may read.
    table.complete(1, await commitMetadata(store, plan, 1, [table.ack(1, 0)!]));
    first.onControl(table.control);
    // Rows after the checkpoint are read, then the slot dies before the next one.
    feeds.rows[0]!.push({ k: a!, v: 100 });
    await until(() => feeds.read[0] === 3, 'the row after checkpoint 1');
    first.stopNow(new Error('crash'));
    await first.done;

    const held = table.take(0, 'w1');
    const second = runner(0, held.epoch, { control: table.control });
    const started = await second.start();
    expect(started).toMatchObject({ restore: 's3', checkpointId: 1 });
    feeds.rows[0]!.push({ k: b!, v: 20 });
    await until(() => feeds.read[0] === 4, 'the replayed and new rows');
    table.trigger(2);
    second.onControl(table.control);
    await until(() => table.ack(2, 0) !== undefined, 'the ack of checkpoint 2');
    const ack = table.ack(2, 0)!;
    if (ack.kind !== 'ack') throw new Error('expected an ack');
    expect(ack.epoch).toBe(held.epoch);
    // The row read after checkpoint 1 is read again (its position was not checkpointed); sums continue from state.
    expect(await committablesOf(store, ack.committables!.path)).toEqual([
      { k: a, v: 101 },
      { k: b, v: 22 },
    ]);
  });

  it('starts a first run from the deployment\'s restoreFrom at the same P, and refuses another parallelism', async () => {
    const { feeds, plan, store, table, runner } = setup();
    const [a] = keysOfSlot(0, 1);
    const first = runner(0, table.take(0, 'w1').epoch);
    await first.start();
    feeds.rows[0]!.push({ k: a!, v: 4 });
    await until(() => feeds.read[0] === 1, 'the row');
    table.trigger(1);
    first.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    const metadataPath = await commitMetadata(store, plan, 1, [table.ack(1, 0)!]);
    await first.stop();
    const restoreFrom = join(store.location, 'chk-0000000001');

    // A new deployment (no `completed`) of the same job: slot 0 starts from checkpoint 1 and its sums continue.
    const fresh = new InMemoryControlTable();
    const config = { ...table.config!, restoreFrom };
    const second = runner(0, fresh.take(0, 'w1').epoch, { config, acks: fresh, control: fresh.control });
    expect(await second.start()).toMatchObject({ restore: 's3', checkpointId: 1 });
    feeds.rows[0]!.push({ k: a!, v: 1 });
    await until(() => feeds.read[0] === 2, 'the next row');
    // Checkpoint ids continue after the restored one (the coordinator's part), so checkpoint 1's files stay as they are.
    fresh.trigger(2);
    second.onControl(fresh.control);
    await until(() => fresh.ack(2, 0) !== undefined, 'the ack of the new deployment');
    const ack = fresh.ack(2, 0)!;
    if (ack.kind !== 'ack') throw new Error('expected an ack');
    expect(await committablesOf(store, ack.committables!.path)).toEqual([{ k: a, v: 5 }]);
    await second.stop();

    // Taken at another parallelism: a ConfigError naming the missing feature.
    const metadata = decodeMetadata((await store.get(metadataPath))!, metadataPath, 1);
    const rescaled = { ...metadata, parallelism: Object.fromEntries(Object.keys(metadata.parallelism).map((v) => [v, 3])) };
    await store.put(metadataPath, encodeMetadata(rescaled));
    const third = runner(0, fresh.take(0, 'w1').epoch, { config, acks: fresh, control: fresh.control });
    await expect(third.start()).rejects.toThrow(ConfigError);
    await expect(runner(0, fresh.take(0, 'w1').epoch, { config, acks: fresh, control: fresh.control }).start()).rejects.toThrow(/rescaling a cluster job is not supported yet/);
  });

  it('fails the slot loudly when its own task file of the completed checkpoint is damaged', async () => {
    const { feeds, plan, store, table, runner } = setup();
    const first = runner(0, table.take(0, 'w1').epoch);
    await first.start();
    feeds.rows[0]!.push({ k: keysOfSlot(0, 1)[0]!, v: 1 });
    await until(() => feeds.read[0] === 1, 'the row');
    table.trigger(1);
    first.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack');
    const ack = table.ack(1, 0)!;
    table.complete(1, await commitMetadata(store, plan, 1, [ack]));
    await first.stop();
    if (ack.kind !== 'ack') throw new Error('expected an ack');
    await store.put(ack.handles[0]!.path, new Uint8Array([1, 2, 3]));
    const second = runner(0, table.take(0, 'w1').epoch, { control: table.control });
    await expect(second.start()).rejects.toMatchObject({ code: 'SLOT_FAILED', message: expect.stringContaining('cannot restore checkpoint 1') });
  });

  it('gives an aligned source the slot key-group range, and fails the slot on a record of another slot', async () => {
    const { feeds, table, runner } = setup();
    const slot = runner(0, table.take(0, 'w1').epoch);
    await slot.start();
    expect(feeds.alignedRanges[0]).toEqual({ start: 0, end: MAX_P / P - 1, maxParallelism: MAX_P });
    feeds.rows[0]!.push({ k: keysOfSlot(1, 1)[0]!, v: 1 });
    await expect(slot.done).rejects.toMatchObject({ code: 'SLOT_FAILED', message: expect.stringContaining("outside slot 0's key groups") });
  });

  it('puts one decline item when a task of the slot cannot write its state', async () => {
    const { table, runner, events } = setup();
    class FailingTaskFiles extends FsObjectStore {
      override put(path: string, data: Uint8Array): Promise<void> {
        if (/task-1-0-e\d+\.state$/.test(path)) return Promise.reject(new Error('disk full'));
        return super.put(path, data);
      }
    }
    const held = table.take(0, 'w1');
    const slot = runner(0, held.epoch, { store: new FailingTaskFiles(tempDir('sluice-slot-failing-')) });
    await slot.start();
    table.trigger(1);
    slot.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the decline of checkpoint 1');
    expect(table.ack(1, 0)).toMatchObject({ kind: 'decline', owner: 'w1', epoch: held.epoch, reason: expect.stringContaining('disk full') });
    expect(events.acked).toEqual(['decline 1#0']);
  });

  it('refuses a two-phase-commit sink without externalCommit, and exchange edges without the exchange stream', async () => {
    const feeds = new Feeds();
    const { plan, env } = buildJob(feeds, committingSink<Row>(new Map()) as never);
    const store = new FsObjectStore(tempDir('sluice-slot-'));
    const table = new InMemoryControlTable();
    const base = {
      plan,
      jobOptions: env.options,
      slot: 0,
      epoch: 1,
      owner: 'w1',
      store,
      acks: table,
      services: memoryServices(),
      control: undefined,
      events: { acked() {}, fenced() {}, warn() {} },
    };
    await expect(new SlotRunner({ ...base, config: clusterConfig(plan, store.location) }).start()).rejects.toThrow(/has no externalCommit descriptor/);
    const exchange = clusterConfig(buildJob(feeds).plan, store.location);
    const withExchange = { ...exchange, edges: exchange.edges.map((e) => (e.mode === 'aligned' ? { ...e, mode: 'exchange' as const } : e)) };
    const job = buildJob(feeds);
    await expect(new SlotRunner({ ...base, plan: job.plan, config: withExchange }).start()).rejects.toThrow(ConfigError);
    await expect(new SlotRunner({ ...base, plan: job.plan, config: withExchange }).start()).rejects.toThrow(/exchange edges need the exchange stream/);
  });
});
