import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { CoordinatorState } from '../../lib/checkpoint/coordinator-protocol.ts';
import { ControlKeys, jobPartition, type ClusterConfigItem, type RequestItem } from '../../lib/cluster/control-items.ts';
import { ClusterConfigConflictError, ClusterControlError, ClusterRequestFailedError } from '../../lib/connectors/aws/cluster/job-admin-errors.ts';
import { JobAdminTable } from '../../lib/connectors/aws/cluster/job-admin-table.ts';
import { runSluice } from '../integration/sluice-process.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

const TABLE = 'cluster-control';
const JOB = 'test/fixtures/jobs/cluster-layout-job.ts';

let dynamo: DynamoDbLocal;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

function config(overrides: Partial<ClusterConfigItem> = {}): ClusterConfigItem {
  return {
    fingerprint: 'f1',
    parallelism: 3,
    maxParallelism: 128,
    edges: [{ id: '0', fromVertex: 0, toVertex: 1, mode: 'exchange', keyGroupHash: 'murmur' }],
    checkpointDir: 's3://bucket/job',
    exchangeStream: 'exchange',
    checkpointing: { intervalMs: 5000, timeoutMs: 600_000, tolerableFailures: 3 },
    tasks: [0, 1, 2].map((subtask) => ({ vertex: 0, subtask })),
    sourceTasks: [0, 1, 2].map((subtask) => ({ vertex: 0, subtask })),
    sinks: [{ nodeId: 3, name: 'Table', externalCommit: { kind: 'dynamodb', table: 'totals' } }],
    createdAt: 1000,
    ...overrides,
  };
}

let jobs = 0;
function admin(jobId = `job-${++jobs}`): JobAdminTable {
  return new JobAdminTable({ tableName: TABLE, jobId, client: dynamo.client });
}

async function items(jobId: string): Promise<Record<string, unknown>[]> {
  const out = await dynamo.client.send(
    new QueryCommand({
      TableName: TABLE,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: jobPartition(jobId) } },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((i) => unmarshall(i));
}

describe('JobAdminTable on DynamoDB Local', () => {
  it('init creates the table and writes config, control and one released lease per slot, with field names at the top level', async () => {
    const table = admin('first');
    expect(await table.init(config())).toBe('initialized');
    const stored = await items('first');
    expect(stored.map((i) => i['sk']).sort()).toEqual(['config', 'control', ControlKeys.lease(0), ControlKeys.lease(1), ControlKeys.lease(2)].sort());
    const byKey = new Map(stored.map((i) => [i['sk'], i]));
    expect(byKey.get('control')).toEqual({ pk: 'job#first', sk: 'control', leaseGeneration: 0, sinkCommittedThrough: 0 });
    expect(byKey.get(ControlKeys.lease(2))).toEqual({ pk: 'job#first', sk: ControlKeys.lease(2), slot: 2, epoch: 0, counter: 0 });
    expect(byKey.get('config')).toMatchObject({ fingerprint: 'f1', parallelism: 3, exchangeStream: 'exchange', sinks: config().sinks });
  });

  it('init again with the same settings changes nothing, not even items a worker changed since', async () => {
    const table = admin();
    await table.init(config());
    const jobId = (table as unknown as { options: { jobId: string } }).options.jobId;
    // A worker took slot 1 meanwhile: a second init must not reset its lease.
    await dynamo.client.send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: marshall({ pk: jobPartition(jobId), sk: ControlKeys.lease(1) }),
        UpdateExpression: 'SET #o = :o, epoch = :e',
        ExpressionAttributeNames: { '#o': 'owner' },
        ExpressionAttributeValues: marshall({ ':o': 'w1', ':e': 4 }),
      }),
    );
    const before = await items(jobId);
    // Same settings, keys in another order (a DynamoDB map keeps no order either).
    expect(await table.init(config({ createdAt: 2000, checkpointing: { tolerableFailures: 3, timeoutMs: 600_000, intervalMs: 5000 } }))).toBe('unchanged');
    expect(await items(jobId)).toEqual(before);
  });

  it('init refuses another fingerprint or P, names --fresh and --restore, and writes nothing', async () => {
    const table = admin();
    await table.init(config());
    const jobId = (table as unknown as { options: { jobId: string } }).options.jobId;
    const before = await items(jobId);
    for (const other of [config({ fingerprint: 'f2' }), config({ parallelism: 4 }), config({ checkpointDir: 's3://bucket/other' })]) {
      const error = await table.init(other).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ClusterConfigConflictError);
      expect((error as Error).message).toContain('--fresh --restore');
      expect((error as ClusterConfigConflictError).differences).toHaveLength(1);
    }
    expect(await items(jobId)).toEqual(before);
    // No lease for a fourth slot was created by the refused P = 4.
    expect(before.some((i) => i['sk'] === ControlKeys.lease(3))).toBe(false);
  });

  it('--fresh clears every item of the job (acks, requests, coordinator) and nothing of other jobs', async () => {
    const table = admin('fresh');
    const neighbour = admin('fresh-neighbour');
    await table.init(config());
    await neighbour.init(config());
    for (const sk of [ControlKeys.ack(7, 0), ControlKeys.request('r1'), 'coordinator']) {
      await dynamo.client.send(new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition('fresh'), sk, junk: true }) }));
    }
    // 40 extra items: the deletes take more than one batch of 25.
    for (let i = 0; i < 40; i++) {
      await dynamo.client.send(new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition('fresh'), sk: ControlKeys.ack(8, i) }) }));
    }
    expect(await table.init(config({ fingerprint: 'f2', parallelism: 2 }), { fresh: true })).toBe('initialized');
    const stored = await items('fresh');
    expect(stored.map((i) => i['sk']).sort()).toEqual(['config', 'control', ControlKeys.lease(0), ControlKeys.lease(1)].sort());
    expect(stored.find((i) => i['sk'] === 'config')).toMatchObject({ fingerprint: 'f2', parallelism: 2 });
    expect(await items('fresh-neighbour')).toHaveLength(5);
  });

  it('--fresh keeps epochs and the lease generation monotonic (they name the state folders): owners and counters reset', async () => {
    const table = admin('fresh-epochs');
    await table.init(config());
    // The previous deployment ran: slots taken and restarted (epochs 4, 9, 2), generation 15, a halt and commits recorded.
    const put = (sk: string, item: object) => dynamo.client.send(new PutItemCommand({ TableName: TABLE, Item: marshall({ pk: jobPartition('fresh-epochs'), sk, ...item }) }));
    await put(ControlKeys.control, { leaseGeneration: 15, sinkCommittedThrough: 6, halted: { savepointPath: 's3://b/sp' } });
    for (const [slot, epoch] of [[0, 4], [1, 9], [2, 2]] as const) await put(ControlKeys.lease(slot), { slot, owner: 'w1', epoch, counter: 77 });
    // Redeploy at P = 2 (slot 2 goes away), then at P = 4 (slots 2 and 3 come back or are new).
    expect(await table.init(config({ fingerprint: 'f2', parallelism: 2 }), { fresh: true })).toBe('initialized');
    let stored = await items('fresh-epochs');
    expect(stored.find((i) => i['sk'] === ControlKeys.control)).toEqual({ pk: jobPartition('fresh-epochs'), sk: ControlKeys.control, leaseGeneration: 15, sinkCommittedThrough: 0 });
    const leases = () => stored.filter((i) => String(i['sk']).startsWith(ControlKeys.leasePrefix)).map(({ slot, owner, epoch, counter }) => ({ slot, owner, epoch, counter }));
    expect(leases()).toEqual([
      { slot: 0, owner: undefined, epoch: 9, counter: 0 },
      { slot: 1, owner: undefined, epoch: 9, counter: 0 },
    ]);
    expect(await table.init(config({ fingerprint: 'f3', parallelism: 4 }), { fresh: true })).toBe('initialized');
    stored = await items('fresh-epochs');
    expect(leases().map((l) => [l.slot, l.epoch])).toEqual([[0, 9], [1, 9], [2, 9], [3, 9]]);
    expect(stored.find((i) => i['sk'] === ControlKeys.control)).toMatchObject({ leaseGeneration: 15 });
    expect(stored.find((i) => i['sk'] === ControlKeys.config)).toMatchObject({ fingerprint: 'f3', parallelism: 4 });
  });

  it('status reads config, control, the coordinator summary and the leases, and sees which counters move', async () => {
    const table = new JobAdminTable({ tableName: TABLE, jobId: 'status', client: dynamo.client });
    await table.init(config());
    const state: Partial<CoordinatorState> = {
      status: 'running',
      inFlight: { checkpointId: 5, savepoint: false, final: false, savepointRequestId: undefined, triggeredAt: 50, phase: 'acknowledging', waitingFor: [{ vertex: 0, subtask: 2 }], acknowledged: [] },
      history: [
        { checkpointId: 3, status: 'completed', savepoint: false, final: false, triggeredAt: 10, durationMs: 5, bytes: 1, acknowledgedTasks: 3, totalTasks: 3, failureReason: undefined },
        { checkpointId: 4, status: 'failed', savepoint: false, final: false, triggeredAt: 20, durationMs: 5, bytes: 0, acknowledgedTasks: 1, totalTasks: 3, failureReason: 'timeout' },
      ],
    };
    await dynamo.client.send(
      new PutItemCommand({
        TableName: TABLE,
        Item: marshall({ pk: jobPartition('status'), sk: 'coordinator', version: 9, execution: 'exec-1', state: JSON.stringify(state) }),
      }),
    );
    // A live owner on slot 0 renews while status watches; slot 1's counter stays put.
    let renewals = 0;
    const renew = setInterval(() => {
      void dynamo.client.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: marshall({ pk: jobPartition('status'), sk: ControlKeys.lease(0) }),
          UpdateExpression: 'SET #o = :o ADD #c :one',
          ExpressionAttributeNames: { '#o': 'owner', '#c': 'counter' },
          ExpressionAttributeValues: marshall({ ':o': 'w1', ':one': 1 }),
        }),
      ).then(() => renewals++);
    }, 50);
    let status;
    try {
      // Wait until a renewal happened so that the watch window surely sees the next ones.
      for (let i = 0; i < 400 && renewals === 0; i++) await new Promise((r) => setTimeout(r, 25));
      status = await table.status({ watchLeasesMs: 1500 });
    } finally {
      clearInterval(renew);
    }
    expect(status.config?.fingerprint).toBe('f1');
    expect(status.control).toEqual({ leaseGeneration: 0, sinkCommittedThrough: 0 });
    expect(status.coordinator).toMatchObject({ execution: 'exec-1', version: 9, status: 'running' });
    expect(status.coordinator?.lastCompleted?.checkpointId).toBe(3);
    expect(status.coordinator?.inFlight).toMatchObject({ checkpointId: 5, waitingFor: 1, acknowledged: 0 });
    expect(status.leases.map((l) => l.slot)).toEqual([0, 1, 2]);
    expect(status.leases[0]).toMatchObject({ owner: 'w1', counterWatch: { moved: true } });
    expect(status.leases[1]).toMatchObject({ counterWatch: { moved: false } });
    expect(status.leases[1]?.owner).toBeUndefined();
  });

  it('a savepoint request is put queued and answered by a (fake) coordinator; a failed one raises', async () => {
    const table = new JobAdminTable({ tableName: TABLE, jobId: 'requests', client: dynamo.client });
    await expect(table.request('savepoint', 'early')).rejects.toBeInstanceOf(ClusterControlError);
    await table.init(config());
    const queued = await table.request('savepoint', 'sp-1', 'tester');
    expect(queued).toMatchObject({ id: 'sp-1', kind: 'savepoint', status: 'queued', requestedBy: 'tester' });
    // Putting the same request again (a retried command) leaves the stored one as it is.
    expect(await table.request('savepoint', 'sp-1')).toEqual(queued);
    const waiting = table.waitForRequest('sp-1', { pollMs: 20, timeoutMs: 60_000 });
    const key = marshall({ pk: jobPartition('requests'), sk: ControlKeys.request('sp-1') });
    const raw = await dynamo.client.send(new GetItemCommand({ TableName: TABLE, Key: key, ConsistentRead: true }));
    expect(unmarshall(raw.Item ?? {})).toMatchObject({ status: 'queued' });
    const answer: Partial<RequestItem> = { status: 'succeeded', result: { checkpointId: 12, path: 's3://bucket/job/savepoints/sp-12' } };
    await dynamo.client.send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: key,
        UpdateExpression: 'SET #s = :s, #r = :r',
        ExpressionAttributeNames: { '#s': 'status', '#r': 'result' },
        ExpressionAttributeValues: marshall({ ':s': answer.status, ':r': answer.result }),
      }),
    );
    expect((await waiting).result?.path).toBe('s3://bucket/job/savepoints/sp-12');

    await table.request('stop', 'stop-1');
    const failing = table.waitForRequest('stop-1', { pollMs: 20, timeoutMs: 60_000 });
    await dynamo.client.send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: marshall({ pk: jobPartition('requests'), sk: ControlKeys.request('stop-1') }),
        UpdateExpression: 'SET #s = :s, #e = :e',
        ExpressionAttributeNames: { '#s': 'status', '#e': 'error' },
        ExpressionAttributeValues: marshall({ ':s': 'failed', ':e': 'a slot declined' }),
      }),
    );
    const error = await failing.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterRequestFailedError);
    expect((error as Error).message).toContain('a slot declined');

    await table.request('savepoint', 'never');
    const timedOut = await table.waitForRequest('never', { pollMs: 20, timeoutMs: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(ClusterControlError);
    expect((timedOut as Error).message).toContain('still queued');
  });

  it('status and requests on a missing table say that init creates it', async () => {
    const table = new JobAdminTable({ tableName: 'no-such-table', jobId: 'x', client: dynamo.client });
    const error = await table.status().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterControlError);
    expect((error as Error).message).toContain('"sluice aws init" creates it');
  });
});

describe('sluice aws init/status against DynamoDB Local (child processes)', () => {
  const env = (): NodeJS.ProcessEnv => ({
    ...process.env,
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_REGION: dynamo.clientConfig.region,
    AWS_ACCESS_KEY_ID: dynamo.clientConfig.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: dynamo.clientConfig.credentials.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  const init = (extra: string[]): string[] => [
    'aws', 'init', JOB, '--control-table', TABLE, '--checkpoint-dir', 's3://bucket/cli', '--exchange-stream', 'ex', ...extra,
  ];

  it('init prints the slot plan, is idempotent, and exits 2 naming --fresh/--restore on another P; --fresh then succeeds', async () => {
    const first = await runSluice(init(['--job-id', 'cli', '--parallelism', '2']), env());
    expect(first.stderr).toContain('written to table');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      slots: [
        { slot: 0, keyGroups: [0, 63] },
        { slot: 1, keyGroups: [64, 127] },
      ],
      edges: [{ id: '0', mode: 'exchange' }],
    });
    const again = await runSluice(init(['--job-id', 'cli', '--parallelism', '2']), env());
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('nothing changed');
    const otherP = await runSluice(init(['--job-id', 'cli', '--parallelism', '3']), env());
    expect(otherP.code).toBe(2);
    expect(otherP.stderr).toContain('--fresh --restore');
    expect(otherP.stdout).toBe('');
    const fresh = await runSluice(init(['--job-id', 'cli', '--parallelism', '3', '--fresh']), env());
    expect(fresh.code).toBe(0);
    const status = await runSluice(['aws', 'status', '--job-id', 'cli', '--control-table', TABLE, '--watch-leases-ms', '0'], env());
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('job cli: 3 slots');
    expect(status.stdout).toContain('leases (3):');
    const json = await runSluice(['aws', 'status', '--json', '--watch-leases-ms', '0'], { ...env(), SLUICE_JOB_ID: 'cli', SLUICE_CONTROL_TABLE: TABLE });
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { config: { parallelism: number } }).config.parallelism).toBe(3);
  }, 120_000);
});
