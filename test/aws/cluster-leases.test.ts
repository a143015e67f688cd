import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { ControlKeys, jobPartition, type AckItem } from '../../lib/cluster/control-items.ts';
import type { LeaseEvent } from '../../lib/cluster/ports.ts';
import { DynamoDbLeaseKeeper } from '../../lib/connectors/aws/cluster/dynamodb-lease-keeper.ts';
import { WorkerControlTable } from '../../lib/connectors/aws/cluster/worker-control-table.ts';
import { ManualClock } from '../../lib/core/index.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';
import { ManualTimers } from '../harness/manual-timers.ts';
import { createWorkerAwsAdapters } from '../../functions/worker/aws-adapters.ts';
import { WORKER_DEFAULTS } from '../../lib/cli/worker-command.ts';

const TABLE = 'sluice-control';
const L = 3000;
const SLOTS = 4;

let dynamo: DynamoDbLocal;
let jobs = 0;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
  await dynamo.client.send(
    new CreateTableCommand({
      TableName: TABLE,
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

/** One worker: its own clock and timers (frozen = SIGSTOPped: its clock runs on, its timers do not fire). */
interface Node {
  readonly id: string;
  readonly clock: ManualClock;
  readonly timers: ManualTimers;
  readonly table: WorkerControlTable;
  readonly keeper: DynamoDbLeaseKeeper;
  readonly events: LeaseEvent[];
  frozen: boolean;
  /** Cut off from DynamoDB: every call fails as a refused connection does. */
  cut: boolean;
  /** Whether this node's runtime hands a slot over when asked (as if it stopped at a checkpoint at once). */
  cooperative: boolean;
}

function cluster(jobId: string) {
  const nodes: Node[] = [];
  const clients: DynamoDBClient[] = [];
  const add = (id: string, options: { cooperative?: boolean; at?: number; slotCount?: number } = {}): Node => {
    const clock = new ManualClock(options.at ?? nodes[0]?.clock.now() ?? 1_000_000);
    const timers = new ManualTimers(clock);
    const client = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler(), maxAttempts: 1 });
    const table = new WorkerControlTable({ tableName: TABLE, jobId, client });
    const keeper = new DynamoDbLeaseKeeper(table, { workerId: id, leaseDurationMs: L, slotCount: 'slotCount' in options ? options.slotCount : SLOTS, clock, timers });
    const node: Node = { id, clock, timers, table, keeper, events: [], frozen: false, cut: false, cooperative: options.cooperative ?? true };
    clients.push(client);
    client.middlewareStack.add(
      (next) => async (args) => {
        if (node.cut) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return next(args);
      },
      { step: 'initialize', name: 'cutOff' },
    );
    keeper.start((event) => {
      node.events.push(event);
      if (event.kind === 'handoffRequested' && node.cooperative) void keeper.handOver({ slot: event.slot, epoch: event.epoch }).catch(() => {});
    });
    nodes.push(node);
    return node;
  };
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 3; i++) {
      await Promise.all(nodes.filter((n) => !n.frozen).map((n) => n.keeper.settled()));
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  /** Moves every clock by `ms` (firing the timers of nodes that are not frozen) and waits for the work it started. */
  const step = async (ms: number): Promise<void> => {
    for (const n of nodes) {
      if (n.frozen) n.clock.advance(ms);
      else n.timers.advance(ms);
    }
    await settle();
  };
  /** Steps a sixth of the lease at a time until `condition` holds; fails after `maxMs` of manual time. */
  const until = async (condition: () => boolean, what: string, maxMs = 20 * L): Promise<void> => {
    await step(0);
    for (let t = 0; !condition(); t += L / 6) {
      if (t > maxMs) throw new Error(`not reached within ${maxMs} ms of manual time: ${what}; held ${nodes.map((n) => `${n.id}=${JSON.stringify(n.keeper.held())}`).join(' ')}`);
      await step(L / 6);
    }
  };
  const close = async (): Promise<void> => {
    for (const n of nodes) {
      n.cut = false;
      await n.keeper.close();
    }
    for (const client of clients) client.destroy();
  };
  return { nodes, add, step, until, close };
}

async function getItem(jobId: string, sk: string): Promise<Record<string, unknown> | undefined> {
  const out = await dynamo.client.send(
    new GetItemCommand({ TableName: TABLE, Key: marshall({ pk: jobPartition(jobId), sk }), ConsistentRead: true }),
  );
  return out.Item === undefined ? undefined : unmarshall(out.Item);
}

const slotsOf = (n: Node): number[] => n.keeper.held().map((h) => h.slot);

function ack(slot: number, owner: string, epoch: number, checkpointId = 7): AckItem {
  return { kind: 'ack', checkpointId, slot, owner, epoch, handles: [], at: 1 };
}

describe('DynamoDbLeaseKeeper on DynamoDB Local', () => {
  it('two keepers started together balance four slots two and two, every take bumping the lease generation', async () => {
    const jobId = `balance-${++jobs}`;
    const c = cluster(jobId);
    const [a, b] = [c.add('a'), c.add('b')];
    try {
      await c.until(() => slotsOf(a).length === 2 && slotsOf(b).length === 2, '2/2');
      // Stable: three more leases of rounds change nothing, and cost per round one renewal per held slot, one
      // heartbeat and two queries.
      const before = { ...a.keeper.stats };
      for (let i = 0; i < 9; i++) await c.step(L / 3);
      const after = a.keeper.stats;
      expect({
        rounds: after.rounds - before.rounds,
        renewals: after.renewals - before.renewals,
        reads: after.reads - before.reads,
        takes: after.takes - before.takes,
        asks: after.asks - before.asks,
      }).toEqual({ rounds: 9, renewals: 18, reads: 18, takes: 0, asks: 0 });
      expect([...slotsOf(a), ...slotsOf(b)].sort()).toEqual([0, 1, 2, 3]);
      expect(slotsOf(a)).toHaveLength(2);
      for (const n of [a, b]) {
        for (const h of n.keeper.held()) expect(await getItem(jobId, ControlKeys.lease(h.slot))).toMatchObject({ owner: n.id, epoch: h.epoch, slot: h.slot });
      }
      const acquisitions = [...a.events, ...b.events].filter((e) => e.kind === 'acquired').length;
      const transfers = [...a.events, ...b.events].filter((e) => e.kind === 'lost' || e.kind === 'handoffRequested').length;
      const control = await getItem(jobId, ControlKeys.control);
      // Every acquisition came from one take or handoff transaction, each of which bumped the generation once.
      expect(control).toMatchObject({ leaseGeneration: acquisitions, sinkCommittedThrough: 0 });
      expect(acquisitions).toBeGreaterThanOrEqual(4);
      expect(transfers).toBe(acquisitions - 4);
    } finally {
      await c.close();
    }
  });

  it('graceful handoff: a joining worker asks, the owner hands over after stopping the slot, the taker adopts at epoch + 1', async () => {
    const jobId = `handoff-${++jobs}`;
    const c = cluster(jobId);
    const a = c.add('a');
    try {
      await c.until(() => slotsOf(a).length === 4, 'a alone takes all four');
      const epochsBefore = new Map(a.keeper.held().map((h) => [h.slot, h.epoch]));
      const b = c.add('b');
      await c.until(() => slotsOf(a).length === 2 && slotsOf(b).length === 2, '2/2 after b joins');
      const requests = a.events.filter((e) => e.kind === 'handoffRequested');
      expect(requests.map((e) => e.slot).sort()).toEqual(slotsOf(b));
      for (const e of b.events) {
        if (e.kind !== 'acquired') continue;
        expect(e).toMatchObject({ previousOwner: 'a', epoch: (epochsBefore.get(e.slot) ?? -1) + 1 });
      }
      expect(a.events.filter((e) => e.kind === 'lost')).toEqual([]);
      expect(await getItem(jobId, ControlKeys.control)).toMatchObject({ leaseGeneration: 6 }); // 4 takes + 2 handoffs
      const lease = await getItem(jobId, ControlKeys.lease(slotsOf(b)[0] ?? -1));
      expect(lease?.['pendingOwner']).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  it('a worker that stops renewing loses its slots after the lease duration on the taker clock; the zombie is fenced', async () => {
    const jobId = `takeover-${++jobs}`;
    const c = cluster(jobId);
    const [a, b] = [c.add('a'), c.add('b')];
    try {
      await c.until(() => slotsOf(a).length === 2 && slotsOf(b).length === 2, '2/2');
      const zombie = b.keeper.held();
      b.frozen = true;
      const frozenAt = a.clock.now();
      // Before a whole lease has passed on a's clock, b's leases are not expired for a.
      while (a.clock.now() + L / 6 < frozenAt + L) {
        await c.step(L / 6);
        expect(slotsOf(a)).toHaveLength(2);
      }
      await c.until(() => slotsOf(a).length === 4, 'a takes over b slots', 3 * L);
      // Failover: at least a lease after b's last renewal, at most a lease plus a round (and one test step) later.
      expect(a.clock.now() - frozenAt).toBeGreaterThanOrEqual(L);
      expect(a.clock.now() - frozenAt).toBeLessThanOrEqual(L + L / 3 + L / 6);
      const taken = a.events.filter((e) => e.kind === 'acquired' && e.previousOwner === 'b');
      expect(taken.map((e) => e.slot).sort()).toEqual(zombie.map((h) => h.slot));

      // The zombie's writes change nothing.
      const slot = zombie[0]!;
      expect(await b.table.putAck(ack(slot.slot, 'b', slot.epoch))).toBe('fenced');
      expect(await getItem(jobId, ControlKeys.ack(7, slot.slot))).toBeUndefined();
      expect(await b.table.renewLease(slot.slot, 'b', slot.epoch)).toBe('fenced');
      const current = a.keeper.held().find((h) => h.slot === slot.slot)!;
      expect(await a.table.putAck(ack(slot.slot, 'a', current.epoch))).toBe('written');
      expect(await getItem(jobId, ControlKeys.ack(7, slot.slot))).toMatchObject({ kind: 'ack', owner: 'a', epoch: current.epoch, slot: slot.slot });

      // SIGCONT: the zombie stops both slots at once and does not take anything back.
      b.frozen = false;
      await c.step(0);
      expect(b.events.filter((e) => e.kind === 'lost').map((e) => e.slot).sort()).toEqual(zombie.map((h) => h.slot));
      expect(slotsOf(b)).toEqual([]);
      await c.until(() => slotsOf(a).length === 2 && slotsOf(b).length === 2, 'rebalanced after b is back');
    } finally {
      await c.close();
    }
  });

  it('restartLocally bumps the epoch and the lease generation in one transaction and fences the old epoch', async () => {
    const jobId = `restart-${++jobs}`;
    const c = cluster(jobId);
    const a = c.add('a');
    try {
      await c.until(() => slotsOf(a).length === 4, 'a takes all four');
      const before = a.keeper.held()[1]!;
      const generation = (await getItem(jobId, ControlKeys.control))?.['leaseGeneration'] as number;
      const after = await a.keeper.restartLocally(before);
      expect(after).toEqual({ slot: before.slot, epoch: before.epoch + 1 });
      expect(await getItem(jobId, ControlKeys.lease(before.slot))).toMatchObject({ owner: 'a', epoch: before.epoch + 1 });
      expect((await getItem(jobId, ControlKeys.control))?.['leaseGeneration']).toBe(generation + 1);
      expect(a.keeper.held().find((h) => h.slot === before.slot)).toEqual(after);
      expect(await a.table.putAck(ack(before.slot, 'a', before.epoch))).toBe('fenced');
      expect(await a.table.putAck(ack(before.slot, 'a', after.epoch))).toBe('written');
      // Restarting an epoch that is no longer held is refused and changes nothing.
      await expect(a.keeper.restartLocally(before)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect((await getItem(jobId, ControlKeys.control))?.['leaseGeneration']).toBe(generation + 1);
      // Renewals go on at the new epoch: the slot is still held a few leases later.
      for (let i = 0; i < 9; i++) await c.step(L / 3);
      expect(a.keeper.held()).toContainEqual(after);
      expect(a.events.filter((e) => e.kind === 'lost')).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('a renewal that keeps failing stops the slot at 2/3 of the lease, before any taker may take it', async () => {
    const jobId = `deadline-${++jobs}`;
    const c = cluster(jobId);
    const a = c.add('a');
    try {
      await c.until(() => slotsOf(a).length === 4, 'a takes all four');
      const lastRound = a.clock.now();
      a.cut = true;
      await c.until(() => slotsOf(a).length === 0, 'a stops its slots', 2 * L);
      const lost = a.events.filter((e) => e.kind === 'lost');
      expect(lost).toHaveLength(4);
      expect(lost[0]).toMatchObject({ reason: expect.stringContaining('2/3 of the lease') });
      expect(a.clock.now() - lastRound).toBeLessThan(L);
    } finally {
      await c.close();
    }
  });

  it('release lets another worker take the slot at once; a handoff whose asker vanished is released instead', async () => {
    const jobId = `release-${++jobs}`;
    const c = cluster(jobId);
    const a = c.add('a');
    try {
      await c.until(() => slotsOf(a).length === 4, 'a takes all four');
      const first = a.keeper.held()[0]!;
      await a.keeper.release(first);
      expect(await getItem(jobId, ControlKeys.lease(first.slot))).toMatchObject({ epoch: first.epoch });
      expect((await getItem(jobId, ControlKeys.lease(first.slot)))?.['owner']).toBeUndefined();
      // a itself takes it back at its next round (released leases are free at once), with a new epoch.
      await c.until(() => slotsOf(a).includes(first.slot), 'a takes the released slot again', L);
      expect(a.keeper.held().find((h) => h.slot === first.slot)?.epoch).toBe(first.epoch + 1);

      // handOver with no pending owner (never asked): released, not lost.
      const second = a.keeper.held()[1]!;
      await a.keeper.handOver(second);
      expect((await getItem(jobId, ControlKeys.lease(second.slot)))?.['owner']).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  it('a repeated take within the token window succeeds once: one epoch, one generation step', async () => {
    const jobId = `token-${++jobs}`;
    const table = new WorkerControlTable({ tableName: TABLE, jobId, client: dynamo.client });
    expect(await table.takeLease(0, 'a', undefined)).toBe('written');
    // The response was lost and the same take is sent again: DynamoDB answers from the ClientRequestToken.
    expect(await table.takeLease(0, 'a', undefined)).toBe('written');
    expect(await getItem(jobId, ControlKeys.lease(0))).toMatchObject({ owner: 'a', epoch: 1, counter: 1 });
    expect(await getItem(jobId, ControlKeys.control)).toMatchObject({ leaseGeneration: 1 });
    // Another worker's take of the same observed state is refused by the condition.
    expect(await table.takeLease(0, 'b', undefined)).toBe('fenced');
    const taken = (await table.readLeases())[0]!;
    expect(await table.takeLease(0, 'b', taken)).toBe('written');
    expect(await getItem(jobId, ControlKeys.control)).toMatchObject({ leaseGeneration: 2 });
    expect(await table.readControl()).toMatchObject({ leaseGeneration: 2, sinkCommittedThrough: 0 });
  });

  it('without a slot count, waits for the config item and then takes P slots; close deletes its heartbeat', async () => {
    const jobId = `config-${++jobs}`;
    const c = cluster(jobId);
    const a = c.add('a', { slotCount: undefined });
    try {
      for (let i = 0; i < 6; i++) await c.step(L / 3);
      expect(slotsOf(a)).toEqual([]);
      expect(await getItem(jobId, ControlKeys.worker('a'))).toMatchObject({ workerId: 'a' });
      await dynamo.client.send(
        new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition(jobId), sk: ControlKeys.config, parallelism: 3, fingerprint: 'f' }) }),
      );
      expect(await a.table.readConfig()).toMatchObject({ parallelism: 3, fingerprint: 'f' });
      await c.until(() => slotsOf(a).length === 3, 'a takes the three slots of the config');
    } finally {
      await c.close();
    }
    expect(await getItem(jobId, ControlKeys.worker('a'))).toBeUndefined();
  });

  it('a malformed lease item is a non-retriable CLUSTER_CONTROL error naming the item', async () => {
    const jobId = `malformed-${++jobs}`;
    const table = new WorkerControlTable({ tableName: TABLE, jobId, client: dynamo.client });
    await dynamo.client.send(
      new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition(jobId), sk: ControlKeys.lease(2), slot: 2, owner: 'x', epoch: 'one', counter: 1 }) }),
    );
    await expect(table.readLeases()).rejects.toMatchObject({ code: 'CLUSTER_CONTROL', retriable: false, message: expect.stringContaining('"epoch":"one"') });
  });

  it("the worker's DynamoDB adapters report a failing lease round through onLeaseError", async () => {
    const jobId = `adapters-${++jobs}`;
    await dynamo.client.send(
      new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition(jobId), sk: ControlKeys.config, parallelism: 3, fingerprint: 'f' }) }),
    );
    await dynamo.client.send(
      new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition(jobId), sk: ControlKeys.lease(1), slot: 1, owner: 'x', epoch: 'one', counter: 1 }) }),
    );
    // createWorkerAwsAdapters takes its endpoint and credentials from the environment, as in a Fargate task.
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: dynamo.clientConfig.region,
      AWS_ACCESS_KEY_ID: dynamo.clientConfig.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: dynamo.clientConfig.credentials.secretAccessKey,
    });
    const errors: unknown[] = [];
    const settings = {
      jobId,
      controlTable: TABLE,
      checkpointDir: '/tmp/unused',
      stateDir: '/tmp/unused',
      exchangeStream: undefined,
      maxSlots: undefined,
      workerId: 'w',
      leaseDurationMs: WORKER_DEFAULTS.leaseDurationMs,
      controlPollMs: WORKER_DEFAULTS.controlPollMs,
    };
    const adapters = await createWorkerAwsAdapters({ settings, workerId: 'w', onLeaseError: (e) => void errors.push(e) });
    adapters.leases.start(() => {});
    try {
      for (let i = 0; i < 600 && errors.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(String(errors[0])).toContain('"epoch":"one"');
      expect(errors[0]).toMatchObject({ code: 'CLUSTER_CONTROL' });
      expect(adapters.leases.held()).toEqual([]);
    } finally {
      await adapters.leases.close();
    }
    // A job deployed with another lease duration: a worker given its own --lease-duration-ms is refused (exit 2).
    const other = `adapters-${++jobs}`;
    await dynamo.client.send(
      new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition(other), sk: ControlKeys.config, parallelism: 3, fingerprint: 'f', leaseDurationMs: 30_000 }) }),
    );
    try {
      await expect(createWorkerAwsAdapters({ settings: { ...settings, jobId: other, leaseDurationMsGiven: true }, workerId: 'w' })).rejects.toThrow(
        /--lease-duration-ms is 10000 but the job was deployed with a lease duration of 30000 ms/,
      );
    } finally {
      process.env = saved; // the SDK reads region and credentials lazily, at the first call
    }
  });
});
