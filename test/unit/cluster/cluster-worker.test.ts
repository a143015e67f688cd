import { afterEach, describe, expect, it } from 'vitest';
import { ClusterWorker } from '../../../lib/runtime/cluster/cluster-worker.ts';
import type { WorkerEvent } from '../../../lib/runtime/cluster/worker-events.ts';
import { memoryServices } from '../../../lib/runtime/default-services.ts';
import type { KeyedServices } from '../../../lib/runtime/operator-chain.ts';
import type { SlotDirs } from '../../../lib/runtime/cluster/slot-state-dirs.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { InMemoryControlTable, InMemoryLeaseKeeper } from '../../harness/cluster/in-memory-control.ts';
import { buildJob, clusterConfig, commitMetadata, Feeds, keysOfSlot, tempDir, until } from './slot-fixtures.ts';

const workers: ClusterWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});

function setup(services: (dirs: SlotDirs) => KeyedServices = () => memoryServices()) {
  const feeds = new Feeds();
  const { plan, env } = buildJob(feeds);
  const store = new FsObjectStore(tempDir('sluice-worker-'));
  const table = new InMemoryControlTable();
  table.config = clusterConfig(plan, store.location);
  const keeper = new InMemoryLeaseKeeper('w1', table);
  const events: WorkerEvent[] = [];
  const worker = new ClusterWorker({
    jobId: 'job-1',
    plan,
    jobOptions: env.options,
    control: table,
    acks: table,
    leases: keeper,
    store,
    stateRoot: tempDir('sluice-worker-state-'),
    tempRoot: tempDir('sluice-worker-temp-'),
    services,
    controlPollMs: 5,
    restartDelayMs: 1,
    events: (e) => events.push(e),
  });
  workers.push(worker);
  const named = (name: WorkerEvent['event']) => events.filter((e) => e.event === name);
  return { feeds, plan, store, table, keeper, worker, events, named };
}

describe('ClusterWorker', () => {
  it('starts acquired slots, acks triggers of every slot it holds, stops a lost slot at once, releases on stop', async () => {
    const { feeds, table, keeper, worker, named } = setup();
    const running = worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    keeper.grant(1);
    await until(() => named('slot-started').length === 2, 'both slots to start');
    expect(named('slot-started').map((e) => e.event === 'slot-started' && e.restore)).toEqual(['fresh', 'fresh']);
    feeds.rows[0]!.push({ k: keysOfSlot(0, 1)[0]!, v: 1 });
    table.trigger(1);
    await until(() => named('ack').length === 2, 'the acks of checkpoint 1');
    expect([...table.acks.keys()].sort()).toEqual(['1#0', '1#1']);

    keeper.lose(1, 'w2');
    expect(named('lease-lost')).toMatchObject([{ slot: 1, reason: 'taken by w2' }]);
    table.trigger(2);
    await until(() => table.ack(2, 0) !== undefined, 'the ack of checkpoint 2 by slot 0');
    // The lost slot wrote nothing more: no ack, and no refused one either.
    expect(table.ack(2, 1)).toBeUndefined();
    expect(table.refused).toEqual([]);

    await worker.stop();
    await running;
    expect(keeper.released.map((h) => h.slot)).toEqual([0]);
    expect(named('released')).toMatchObject([{ slot: 0 }]);
    expect(keeper.closed).toBe(true);
    expect(table.leases.get(0)?.owner).toBeUndefined();
  });

  it('restarts a failed slot locally at a new epoch and restores it from the completed checkpoint', async () => {
    const { feeds, plan, store, table, keeper, worker, named } = setup();
    void worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    const first = keeper.grant(0);
    await until(() => named('slot-started').length === 1, 'the slot to start');
    feeds.rows[0]!.push({ k: keysOfSlot(0, 1)[0]!, v: 1 });
    await until(() => feeds.read[0] === 1, 'the row');
    table.trigger(1);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    table.complete(1, await commitMetadata(store, plan, 1, [table.ack(1, 0)!]));
    await until(() => feeds.completions[0]!.includes(1), 'the completion');
    feeds.failOnce = 0;
    await until(() => named('slot-started').length === 2, 'the restarted slot');
    expect(named('slot-failed')).toMatchObject([{ slot: 0, epoch: first.epoch, code: 'SLOT_FAILED' }]);
    expect(named('slot-started')[1]).toMatchObject({ slot: 0, epoch: first.epoch + 1, restore: 's3', checkpointId: 1 });
    expect(table.leases.get(0)).toMatchObject({ owner: 'w1', epoch: first.epoch + 1 });
    table.trigger(2);
    await until(() => table.ack(2, 0) !== undefined, 'the ack of checkpoint 2 at the new epoch');
    expect(table.ack(2, 0)!.epoch).toBe(first.epoch + 1);
  });

  it('a record of another slot on an aligned edge fails the slot for good: KEY_GROUP_MISMATCH names key and slot, no restart', async () => {
    const { feeds, keeper, worker, named } = setup();
    const running = worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    const held = keeper.grant(0);
    await until(() => named('slot-started').length === 1, 'the slot to start');
    const key = keysOfSlot(1, 1)[0]!;
    feeds.rows[0]!.push({ k: key, v: 1 });
    await expect(running).rejects.toMatchObject({ code: 'KEY_GROUP_MISMATCH', retriable: false });
    const failed = named('slot-failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ slot: 0, epoch: held.epoch, code: 'KEY_GROUP_MISMATCH' });
    expect(failed[0]).not.toHaveProperty('restartInMs');
    const error = failed[0]!.event === 'slot-failed' ? failed[0]!.error : '';
    expect(error).toContain(`key ${JSON.stringify(key)}`);
    expect(error).toContain("outside slot 0's key groups");
    expect(named('slot-started')).toHaveLength(1);
  });

  it('doubles the restart delay of a slot failing after every start, until it acks a checkpoint again', async () => {
    const { feeds, table, keeper, worker, named } = setup();
    void worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    for (let i = 1; i <= 4; i++) {
      await until(() => named('slot-started').length === i, `start ${i}`);
      feeds.failOnce = 0;
      await until(() => named('slot-failed').length === i, `failure ${i}`);
    }
    // Each start succeeded (restored, running) and failed before acking anything: the failures are consecutive.
    expect(named('slot-failed').map((e) => e.event === 'slot-failed' && e.restartInMs)).toEqual([1, 2, 4, 8]);
    await until(() => named('slot-started').length === 5, 'start 5');
    table.trigger(1);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    feeds.failOnce = 0;
    await until(() => named('slot-failed').length === 5, 'failure 5');
    expect(named('slot-failed')[4]).toMatchObject({ restartInMs: 1 });
  });

  it('hands a slot over at the next completed checkpoint, and stops everything on halt', async () => {
    const { plan, store, table, keeper, worker, named } = setup();
    const running = worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    keeper.grant(1);
    await until(() => named('slot-started').length === 2, 'both slots');
    keeper.askHandoff(1, 'w2');
    table.trigger(1);
    await until(() => table.ack(1, 0) !== undefined && table.ack(1, 1) !== undefined, 'the acks of checkpoint 1');
    expect(keeper.handedOver).toEqual([]);
    table.complete(1, await commitMetadata(store, plan, 1, [table.ack(1, 0)!, table.ack(1, 1)!]));
    await until(() => keeper.handedOver.length === 1, 'the handoff');
    expect(named('released')).toMatchObject([{ slot: 1, to: 'w2' }]);
    table.halt(1, 'savepoints/savepoint-1');
    await running;
    expect(keeper.released.map((h) => h.slot)).toEqual([0]);
  });

  it('carries out a handoff asked for before the slot started', async () => {
    const { plan, store, table, keeper, worker, named } = setup();
    void worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    // Before the runner exists (the worker is still reading control and preparing directories).
    keeper.askHandoff(0, 'w2');
    await until(() => named('slot-started').length === 1, 'the slot to start');
    table.trigger(1);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1');
    table.complete(1, await commitMetadata(store, plan, 1, [table.ack(1, 0)!]));
    await until(() => keeper.handedOver.length === 1, 'the handoff');
    expect(named('released')).toMatchObject([{ slot: 0, to: 'w2' }]);
  });

  it('starts a slot taken again only once its previous runner in this process closed its state', async () => {
    const log: string[] = [];
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const services = (dirs: SlotDirs): KeyedServices => {
      const epoch = dirs.stateDir.slice(dirs.stateDir.lastIndexOf('e'));
      log.push(`open ${epoch}`);
      const inner = memoryServices();
      return {
        ...inner,
        createKeyedState: (...args: Parameters<KeyedServices['createKeyedState']>) => {
          const backend = inner.createKeyedState(...args);
          const dispose = backend.dispose.bind(backend);
          // The first epoch's backend closes slowly (a task stuck in an upload while its lease was lost).
          backend.dispose = async () => {
            if (epoch === 'e1') await gate;
            await dispose();
            log.push(`closed ${epoch}`);
          };
          return backend;
        },
      };
    };
    const { table, keeper, worker, named } = setup(services);
    void worker.run();
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    await until(() => named('slot-started').length === 1, 'the slot to start');
    keeper.lose(0, 'w2');
    // Reclaimed at once (the item still names this worker after overdue renewals).
    const again = keeper.grant(0);
    const reads = table.controlReads;
    await until(() => table.controlReads > reads + 20, 'the worker to poll a while');
    expect(log).toEqual(['open e1']);
    openGate();
    await until(() => named('slot-started').length === 2, 'the slot to start again');
    expect(log.indexOf(`open e${again.epoch}`)).toBeGreaterThan(log.lastIndexOf('closed e1'));
  });

  it('does not take leases for a halted job', async () => {
    const { table, keeper, worker, named } = setup();
    table.halt(3, 's3://b/savepoints/sp-3');
    await worker.run();
    expect(keeper.listening).toBe(false);
    expect(named('warning')).toMatchObject([{ message: expect.stringContaining('is halted') }]);
  });

  it('refuses to run without the config item', async () => {
    const { table, worker } = setup();
    table.config = undefined;
    await expect(worker.run()).rejects.toThrow(/sluice aws init/);
  });
});
