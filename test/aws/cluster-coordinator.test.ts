import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ControlKeys, jobPartition, type AckItem, type ClusterConfigItem, type ControlItem, type CoordinatorItem, type RequestItem } from '../../lib/cluster/control-items.ts';
import { checkpointDirName, metadataPath } from '../../lib/checkpoint/naming.ts';
import { encodeSlotCommittables, slotCommittablesName } from '../../lib/cluster/slot-committables.ts';
import { dynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import type { DynamoDbCommitter } from '../../lib/connectors/aws/dynamodb/dynamodb-committer.ts';
import type { DynamoDbCommittable } from '../../lib/connectors/aws/dynamodb/committable.ts';
import { dynamoDbCommitterFromDescriptor } from '../../lib/connectors/aws/dynamodb/external-commit.ts';
import { SinkCommitRegistry, type ExternalCommitterFactory } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { DEFAULT_SINK_COMMIT_REGISTRY } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { openS3CheckpointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import type { DynamoDbCommitPoint } from '../../lib/connectors/aws/s3/dynamodb-commit-point.ts';
import { CoordinatorControlTable } from '../../lib/connectors/aws/cluster/coordinator-control-table.ts';
import { LocalStepFunctions } from '../../functions/coordinator/local/local-step-functions.ts';
import { handler as recover } from '../../functions/coordinator/recover.ts';
import { handler as trigger } from '../../functions/coordinator/trigger.ts';
import { handler as collectAcks } from '../../functions/coordinator/collect-acks.ts';
import { useSettings, type CoordinatorSettings } from '../../functions/coordinator/settings.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';

const CONTROL = 'control';
const COMMITS = 'commits';
const SINK = 'sink-table';
const BUCKET = 'ckpt';
const P = 2;

let dynamo: DynamoDbLocal;
let s3: S3Emulator;
let jobs = 0;

beforeAll(async () => {
  [dynamo, s3] = await Promise.all([startDynamoDbLocal(), startS3Emulator({ buckets: [BUCKET] })]);
  await ensureTable({ tableName: CONTROL, partitionKey: { name: 'pk' }, sortKey: { name: 'sk' }, client: dynamo.client });
  await ensureTable({ tableName: SINK, partitionKey: { name: 'pk' }, client: dynamo.client });
  await ensureCheckpointCommitTable(COMMITS, { client: dynamo.client });
}, 180_000);

afterAll(async () => {
  useSettings(undefined);
  await Promise.all([dynamo?.stop(), s3?.stop()]);
});

async function until(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Job {
  readonly jobId: string;
  readonly dir: string;
  readonly events: Record<string, unknown>[];
  readonly settings: CoordinatorSettings;
  item<T>(sk: string): Promise<T | undefined>;
  control(): Promise<ControlItem | undefined>;
  put(sk: string, value: object): Promise<void>;
  bumpGeneration(): Promise<void>;
  completed(): number[];
}

/** A fresh job: its config item, its own storage prefix and settings (clients of the emulators, a log to read). */
async function newJob(options: { cycleSeconds?: number; registry?: SinkCommitRegistry; intervalMs?: number; timeoutMs?: number } = {}): Promise<Job> {
  const jobId = `job${++jobs}`;
  const dir = `s3://${BUCKET}/${jobId}?commitTable=${COMMITS}`;
  const events: Record<string, unknown>[] = [];
  const client: DynamoDBClient = dynamo.client;
  const settings: CoordinatorSettings = {
    jobId,
    controlTable: CONTROL,
    checkpointDir: undefined,
    ackPollMs: 100,
    cycleSeconds: options.cycleSeconds ?? 240,
    dynamo: client,
    s3: s3.client as S3Client,
    registry: options.registry ?? DEFAULT_SINK_COMMIT_REGISTRY,
    now: () => Date.now(),
    log: (e) => {
      events.push(e);
      if (process.env['TRACE_COORDINATOR'] === '1') console.log(JSON.stringify(e));
    },
  };
  const key = (sk: string) => ({ pk: { S: jobPartition(jobId) }, sk: { S: sk } });
  const sink = dynamoDbSink<unknown>({ table: SINK, partitionKey: 'pk', toWrites: () => null, jobId });
  const tasks = [0, 1].flatMap((vertex) => Array.from({ length: P }, (_, subtask) => ({ vertex, subtask })));
  const config: ClusterConfigItem = {
    fingerprint: 'fp',
    parallelism: P,
    maxParallelism: 128,
    edges: [],
    checkpointDir: dir,
    checkpointing: { intervalMs: options.intervalMs ?? 300, timeoutMs: options.timeoutMs ?? 20_000, retain: 2 },
    tasks,
    sourceTasks: tasks.filter((t) => t.vertex === 0),
    sinks: [{ nodeId: 7, name: sink.name, externalCommit: sink.externalCommit as ClusterConfigItem['sinks'][number]['externalCommit'] }],
    createdAt: Date.now(),
  };
  const job: Job = {
    jobId,
    dir,
    events,
    settings,
    async item<T>(sk: string) {
      const out = await client.send(new GetItemCommand({ TableName: CONTROL, Key: key(sk), ConsistentRead: true }));
      return out.Item === undefined ? undefined : (unmarshall(out.Item) as T);
    },
    control: () => job.item<ControlItem>(ControlKeys.control),
    async put(sk, value) {
      await client.send(new PutItemCommand({ TableName: CONTROL, Item: { ...marshall(value, { removeUndefinedValues: true }), ...key(sk) } }));
    },
    async bumpGeneration() {
      await client.send(
        new UpdateItemCommand({ TableName: CONTROL, Key: key(ControlKeys.control), UpdateExpression: 'ADD leaseGeneration :one', ExpressionAttributeValues: { ':one': { N: '1' } } }),
      );
    },
    completed: () => events.filter((e) => e['event'] === 'checkpoint-completed').map((e) => e['checkpointId'] as number),
  };
  await job.put(ControlKeys.config, config);
  useSettings(settings);
  return job;
}

/**
 * Fake workers: every slot acks each new trigger (task state files, a committables object with one DynamoDB
 * transaction that adds 1 to the slot's counter item and records the checkpoint id, then the ack item).
 */
function fakeWorkers(job: Job, options: { beforeAck?: (checkpointId: number) => Promise<void>; skip?: (checkpointId: number, slot: number) => boolean } = {}): { stop(): Promise<void> } {
  const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
  let running = true;
  let acked = 0;
  const loop = (async () => {
    while (running) {
      const control = await job.control();
      const t = control?.trigger;
      if (t !== undefined && t.checkpointId > acked) {
        acked = t.checkpointId;
        await options.beforeAck?.(t.checkpointId);
        for (let slot = 0; slot < P; slot++) {
          if (options.skip?.(t.checkpointId, slot) === true) continue;
          const epoch = 1;
          const handles = [];
          for (const vertex of [0, 1]) {
            const data = new TextEncoder().encode(`state ${vertex}/${slot} @${t.checkpointId}`);
            const written = await storage.writeTaskState(t.checkpointId, `task-${vertex}-${slot}.state`, data);
            handles.push({ task: { vertex, subtask: slot }, vertexName: `v${vertex}`, ...written });
          }
          const committable = {
            txn: `${job.jobId}/e${epoch}/${slot}/c${t.checkpointId}`,
            preparedAt: t.timestamp,
            chunks: [
              {
                generation: 0,
                items: [
                  {
                    Update: {
                      TableName: SINK,
                      Key: { pk: { S: `${job.jobId}-slot-${slot}` } },
                      UpdateExpression: 'ADD #total :one SET lastCheckpoint = :id',
                      ExpressionAttributeNames: { '#total': 'total' },
                      ExpressionAttributeValues: { ':one': { N: '1' }, ':id': { N: String(t.checkpointId) } },
                    },
                  },
                ],
              },
            ],
          };
          const bytes = encodeSlotCommittables({ version: 1, checkpointId: t.checkpointId, slot, epoch, sinks: [{ nodeId: 7, committables: t.savepoint && t.stop !== true ? [] : [committable] }] });
          const path = `${checkpointDirName(t.checkpointId)}/${slotCommittablesName(slot, epoch)}`;
          await storage.store.put(path, bytes);
          const ack: AckItem = {
            kind: 'ack',
            checkpointId: t.checkpointId,
            slot,
            owner: 'w1',
            epoch,
            handles,
            committables: { path, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') },
            at: Date.now(),
          };
          await job.put(ControlKeys.ack(t.checkpointId, slot), ack);
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** The sink table as the fake workers' writes make it: per slot, how many checkpoints added to it and the last one. */
async function sinkRows(job: Job): Promise<Map<string, { total: number; lastCheckpoint: number }>> {
  const out = await dynamo.client.send(new ScanCommand({ TableName: SINK, ConsistentRead: true }));
  const rows = new Map<string, { total: number; lastCheckpoint: number }>();
  for (const raw of out.Items ?? []) {
    const item = unmarshall(raw) as { pk: string; total?: number; lastCheckpoint?: number };
    if (item.pk.startsWith(`${job.jobId}-slot-`)) rows.set(item.pk, { total: item.total ?? 0, lastCheckpoint: item.lastCheckpoint ?? 0 });
  }
  return rows;
}

/** Every committed checkpoint added exactly once to every slot's counter; sinkCommittedThrough covers the last. */
async function expectSinkEqualsReference(job: Job): Promise<void> {
  const control = await job.control();
  const committed = job.events.filter((e) => e['event'] === 'sinks-committed').map((e) => e['checkpointId'] as number);
  const distinct = [...new Set(committed)];
  expect(distinct).toEqual([...distinct].sort((a, b) => a - b));
  const rows = await sinkRows(job);
  for (let slot = 0; slot < P; slot++) {
    expect(rows.get(`${job.jobId}-slot-${slot}`)).toEqual({ total: distinct.length, lastCheckpoint: Math.max(...distinct) });
  }
  expect(control?.sinkCommittedThrough).toBe(Math.max(...distinct));
}

describe('cluster coordinator on DynamoDB Local and s3rver', { timeout: 90_000 }, () => {
  it('completes checkpoints and commits their sinks in order, through the ASL run locally', async () => {
    const job = await newJob({ intervalMs: 2000 });
    // The coordinator's own clients, counting its requests (the figures in docs/cluster.md).
    const calls: Record<string, number> = {};
    const count = (service: string) => (name: string | undefined): void => {
      const key = `${service}:${name ?? '?'}`;
      calls[key] = (calls[key] ?? 0) + 1;
    };
    const ddb = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler() });
    ddb.middlewareStack.add((next, context) => (args) => (count('dynamodb')(context.commandName), next(args)), { step: 'initialize', name: 'countCalls' });
    const s3c = new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
    s3c.middlewareStack.add((next, context) => (args) => (count('s3')(context.commandName), next(args)), { step: 'initialize', name: 'countCalls' });
    useSettings({ ...job.settings, dynamo: ddb, s3: s3c });
    const workers = fakeWorkers(job);
    // Waits as the ASL says (1 s ack polls, the 2 s interval), so the counts are those of a deployment.
    const sfn = await LocalStepFunctions.load({ waitMs: 'asl' });
    const run = sfn.run();
    await until('3 sink commits', () => job.events.filter((e) => e['event'] === 'sinks-committed').length >= 3);
    sfn.stop();
    await run;
    await workers.stop();
    await expectSinkEqualsReference(job);
    const control = await job.control();
    expect(control?.completed?.checkpointId).toBe(Math.max(...job.completed()));
    if (process.env['TRACE_COORDINATOR'] === '1') console.log(JSON.stringify({ completed: job.completed().length, stats: sfn.stats, calls }));
    // `sluice checkpoints` and restores read the same commit records.
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const listed = (await storage.list()).filter((c) => c.status === 'complete').map((c) => c.checkpointId);
    expect(listed.length).toBeGreaterThan(0);
    expect(job.completed()).toEqual(expect.arrayContaining(listed));
  });

  it('aborts a checkpoint when the lease generation moves between trigger and commit; the next one completes', async () => {
    const job = await newJob();
    let bumped: number | undefined;
    const workers = fakeWorkers(job, {
      beforeAck: async (id) => {
        if (bumped === undefined) {
          bumped = id;
          await job.bumpGeneration();
        }
      },
    });
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    const sinksAfterBump = (): boolean => job.events.some((e) => e['event'] === 'sinks-committed' && bumped !== undefined && (e['checkpointId'] as number) > bumped);
    await until('the sinks of a checkpoint after the bump', sinksAfterBump);
    sfn.stop();
    await run;
    await workers.stop();
    expect(job.completed()).not.toContain(bumped);
    // The aborted checkpoint's committables were never committed: every counter moved once per committed checkpoint.
    await expectSinkEqualsReference(job);
    expect(job.events.some((e) => e['event'] === 'checkpoint-aborted' && e['checkpointId'] === bumped)).toBe(true);
  });

  it('aborts at once a checkpoint whose slot was taken over and that the new owner never acks (no wait for the timeout)', async () => {
    // A timeout far beyond the test's bound: only the generation check can end the checkpoint.
    const job = await newJob({ timeoutMs: 3_600_000 });
    let bumped: number | undefined;
    const workers = fakeWorkers(job, {
      beforeAck: async (id) => {
        if (bumped === undefined) {
          bumped = id;
          await job.bumpGeneration();
        }
      },
      // Slot 1's new owner found the trigger at its start and skips it, as a starting slot does.
      skip: (id, slot) => id === bumped && slot === 1,
    });
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    await until('the sinks of a checkpoint after the take-over', () =>
      job.events.some((e) => e['event'] === 'sinks-committed' && bumped !== undefined && (e['checkpointId'] as number) > bumped),
    );
    sfn.stop();
    await run;
    await workers.stop();
    expect(job.completed()).not.toContain(bumped);
    const aborted = job.events.find((e) => e['event'] === 'checkpoint-aborted' && e['checkpointId'] === bumped);
    expect(String(aborted?.['reason'])).toMatch(/taken over/);
    await expectSinkEqualsReference(job);
  });

  it('retries CommitSinks that throws once halfway: the repeat changes nothing (request tokens, markers), the table equals the reference', async () => {
    let thrown = false;
    const committers: DynamoDbCommitter[] = [];
    const failingOnce: ExternalCommitterFactory = (descriptor, context) => {
      const real = dynamoDbCommitterFromDescriptor(descriptor, context.dynamoDbClient);
      committers.push(real);
      return {
        async commit(committables) {
          // Half of a checkpoint's committables go through, then the handler dies.
          const half = Math.ceil(committables.length / 2);
          await real.commit(committables.slice(0, half) as DynamoDbCommittable[]);
          if (!thrown) {
            thrown = true;
            throw new Error('injected: CommitSinks dies halfway');
          }
          await real.commit(committables.slice(half) as DynamoDbCommittable[]);
        },
      };
    };
    const job = await newJob({ registry: new SinkCommitRegistry({ dynamodb: failingOnce }) });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    await until('3 sink commits', () => job.events.filter((e) => e['event'] === 'sinks-committed').length >= 3);
    sfn.stop();
    await run;
    await workers.stop();
    expect(thrown).toBe(true);
    // The retry sent the first half again: DynamoDB took it as already done (its request token within 10 minutes,
    // its commit marker after that), so every slot's counter moved once per checkpoint.
    const resent = committers.reduce((n, c) => n + c.stats.committed + c.stats.alreadyCommitted, 0);
    const committed = new Set(job.events.filter((e) => e['event'] === 'sinks-committed').map((e) => e['checkpointId'])).size;
    expect(resent).toBeGreaterThan(committed * P);
    const scan = await dynamo.client.send(new ScanCommand({ TableName: SINK, ConsistentRead: true }));
    const markers = (scan.Items ?? []).map((i) => unmarshall(i) as { pk: string }).filter((i) => i.pk.startsWith(`#sluice-commit#${job.jobId}/`));
    expect(markers.length).toBe(committed * P);
    await expectSinkEqualsReference(job);
  });

  it('with maxChildren 2 continues as new: at least 3 executions and no completed checkpoint lost', async () => {
    const job = await newJob({ cycleSeconds: 1 });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100, input: { maxChildren: 2 } });
    const run = sfn.run();
    await until('3 supervisor executions and 4 checkpoints', () => sfn.stats.supervisorExecutions.length >= 3 && job.completed().length >= 4);
    sfn.stop();
    await run;
    await workers.stop();
    const completed = job.completed();
    expect(new Set(completed).size).toBe(completed.length);
    // Ids only grow across executions: each new execution resumed the coordinator item, none started over.
    expect(completed).toEqual([...completed].sort((a, b) => a - b));
    expect(sfn.stats.cyclesExecutions).toBeGreaterThanOrEqual(4);
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const latest = await storage.latestComplete();
    expect(latest?.checkpointId).toBe(Math.max(...completed));
  });

  it('commits metadata on the lease-generation condition; a repeat of the same bytes is committed whatever the generation', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const point = storage.catalog.commitPoint as DynamoDbCommitPoint;
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    const bytes = new TextEncoder().encode('metadata bytes');
    const sha = createHash('sha256').update(bytes).digest('hex');
    await job.bumpGeneration();
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(0)])).toBe('refused');
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(1)])).toBe('committed');
    await job.bumpGeneration();
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(1)])).toBe('committed');
    const other = new TextEncoder().encode('other bytes');
    await expect(point.commitConditioned(9, 'chk-9/_metadata', other, createHash('sha256').update(other).digest('hex'), [table.leaseGenerationCheck(2)])).rejects.toThrow(/already committed/);
    expect((await point.records()).get(9)?.sha256).toBe(sha);
  });

  it('Recover of a new execution finishes the metadata commit a dead handler left pending, with the same bytes', async () => {
    const job = await newJob({ intervalMs: 1 });
    // The metadata upload fails while CollectAcks runs: it dies after persisting the exact metadata.
    let failMetadata = false;
    const faulty = new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: string }).Key ?? '';
        if (failMetadata && context.commandName === 'PutObjectCommand' && key.endsWith('_metadata')) throw new Error('injected: metadata upload lost');
        return next(args);
      },
      { step: 'initialize', name: 'failMetadata' },
    );
    useSettings({ ...job.settings, s3: faulty });
    const workers = fakeWorkers(job);
    await recover({ execution: 'A' });
    await until('a trigger', async () => (await trigger({ execution: 'A' })).phase === 'collect');
    const id = (await job.control())?.trigger?.checkpointId ?? -1;
    await until('the acks of the trigger', async () => (await job.item(ControlKeys.ack(id, P - 1))) !== undefined);
    failMetadata = true;
    await expect(collectAcks({ execution: 'A' })).rejects.toThrow(/metadata/);
    const pending = (await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit;
    expect(pending?.checkpointId).toBe(id);
    failMetadata = false;
    expect((await recover({ execution: 'B' })).status).toBe('running');
    await workers.stop();
    expect(job.completed()).toEqual([id]);
    expect((await job.control())?.completed?.checkpointId).toBe(id);
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit).toBeUndefined();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const stored = await storage.store.get(metadataPath({ kind: 'checkpoint', checkpointId: id }));
    expect(Buffer.from(stored ?? new Uint8Array()).toString('utf8')).toBe(pending?.metadataJson);
    await expectSinkEqualsReference(job);
  });

  it('sets control.completed in the metadata commit transaction: a handler dying right after it leaves completed moved', async () => {
    const job = await newJob({ intervalMs: 1 });
    // Every write after the commit transaction fails: the handler dies before its outbox (notifyComplete) could run.
    let committed = false;
    const faulty = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler() });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        if (committed && context.commandName !== 'GetItemCommand' && context.commandName !== 'QueryCommand') throw new Error('injected: handler dies after the commit');
        const out = await next(args);
        if (context.commandName === 'TransactWriteItemsCommand') committed = true;
        return out;
      },
      { step: 'initialize', name: 'dieAfterCommit' },
    );
    const workers = fakeWorkers(job);
    await recover({ execution: 'A' });
    await until('a trigger', async () => (await trigger({ execution: 'A' })).phase === 'collect');
    const id = (await job.control())?.trigger?.checkpointId ?? -1;
    await until('the acks of the trigger', async () => (await job.item(ControlKeys.ack(id, P - 1))) !== undefined);
    await workers.stop();
    useSettings({ ...job.settings, dynamo: faulty });
    await expect(collectAcks({ execution: 'A' })).rejects.toThrow(/injected|could not write/);
    expect(committed).toBe(true);
    // What a slot taking over now reads: the checkpoint just committed, not the previous one.
    expect((await job.control())?.completed).toEqual({ checkpointId: id, metadataPath: metadataPath({ kind: 'checkpoint', checkpointId: id }) });
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit?.checkpointId).toBe(id);
  });

  it('refuses the commit and leaves control.completed alone when the lease generation moved', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const point = storage.catalog.commitPoint as DynamoDbCommitPoint;
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    const bytes = new TextEncoder().encode('metadata bytes');
    const sha = createHash('sha256').update(bytes).digest('hex');
    await job.bumpGeneration();
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(0, 4, 'chk-4/_metadata')])).toBe('refused');
    expect((await job.control())?.completed).toBeUndefined();
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(1, 4, 'chk-4/_metadata')])).toBe('committed');
    expect((await job.control())?.completed).toEqual({ checkpointId: 4, metadataPath: 'chk-4/_metadata' });
    // A repeat after the commit (completed already there) is still "committed" through the record's sha256.
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(1, 4, 'chk-4/_metadata')])).toBe('committed');
  });

  it('Recover of a halted job deletes shared files no complete checkpoint lists, once older than twice the timeout; of a running job none', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    await storage.store.put('shared/orphan-1.sst', new TextEncoder().encode('x'));
    await recover({ execution: 'A' });
    expect(await storage.sharedState.list()).toEqual(['shared/orphan-1.sst']);
    // The config's timeout is 20 s: an hour later the orphan is old enough, but slots run: a running chain may
    // still reference it (a file of an aborted checkpoint that the next completed one lists again).
    useSettings({ ...job.settings, now: () => Date.now() + 3_600_000 });
    expect((await recover({ execution: 'A' })).status).toBe('running');
    expect(await storage.sharedState.list()).toEqual(['shared/orphan-1.sst']);
    // Halted (every slot stopped at the stop savepoint): now it goes.
    const item = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    await job.put(ControlKeys.coordinator, { ...item, state: { ...item?.state, status: 'halted' } });
    expect((await recover({ execution: 'A' })).status).toBe('halted');
    expect(await storage.sharedState.list()).toEqual([]);
    expect(job.events.some((e) => e['event'] === 'shared-files-deleted')).toBe(true);
  });

  it('a second execution supersedes the first', async () => {
    const job = await newJob();
    expect((await recover({ execution: 'A' })).status).toBe('running');
    expect((await trigger({ execution: 'A' })).status).toBe('running');
    expect((await recover({ execution: 'B' })).status).toBe('running');
    expect(await trigger({ execution: 'A' })).toMatchObject({ status: 'superseded', phase: 'done' });
    expect((await trigger({ execution: 'B' })).status).toBe('running');
    expect((await job.item<{ execution: string }>(ControlKeys.coordinator))?.execution).toBe('B');
  });

  it('a stop whose CommitSinks keeps failing after the halt ends only once its savepoint is committed; a repeat after the discard is a no-op', async () => {
    let failures = 0;
    const failing: ExternalCommitterFactory = (descriptor, context) => {
      const real = dynamoDbCommitterFromDescriptor(descriptor, context.dynamoDbClient);
      return {
        async commit(committables) {
          if (failures > 0) {
            failures--;
            throw new Error('injected: the sink table throttles');
          }
          await real.commit(committables as DynamoDbCommittable[]);
        },
      };
    };
    const job = await newJob({ intervalMs: 60_000, registry: new SinkCommitRegistry({ dynamodb: failing }) });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    // More failures than CommitSinks' attempts in a cycles execution: the cycles execution ends `halted` with the
    // stop savepoint's committables still pending.
    failures = 12;
    await job.put(ControlKeys.request('stop1'), { id: 'stop1', kind: 'stop', status: 'queued', requestedAt: Date.now(), updatedAt: Date.now() } satisfies RequestItem);
    await run; // the supervisor ends once halted and committed
    await workers.stop();
    expect(failures).toBe(0);
    const stop = await job.item<RequestItem>(ControlKeys.request('stop1'));
    const stopId = stop?.result?.checkpointId ?? -1;
    expect((await job.control())?.sinkCommittedThrough).toBe(stopId);
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.sinkCommits ?? []).toEqual([]);
    await expectSinkEqualsReference(job);
    // A handler died after the discard and before its save (as the old order allowed): the entry is listed again,
    // its committables folder is gone. Recover removes it without reading anything.
    const item = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    await job.put(ControlKeys.coordinator, { ...item, sinkCommits: [{ checkpointId: stopId, refs: [{ path: `${checkpointDirName(stopId)}/missing`, bytes: 1, sha256: 'x' }] }] });
    expect((await recover({ execution: 'again' })).status).toBe('halted');
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.sinkCommits ?? []).toEqual([]);
    await expectSinkEqualsReference(job);
  });

  it('takes savepoint and stop requests', async () => {
    const job = await newJob({ intervalMs: 60_000 });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    const request = (id: string, kind: RequestItem['kind']): Promise<void> => job.put(ControlKeys.request(id), { id, kind, status: 'queued', requestedAt: Date.now(), updatedAt: Date.now() } satisfies RequestItem);
    await request('sp1', 'savepoint');
    await until('the savepoint', async () => (await job.item<RequestItem>(ControlKeys.request('sp1')))?.status === 'succeeded');
    const sp = await job.item<RequestItem>(ControlKeys.request('sp1'));
    expect(sp?.result?.path).toContain(`${BUCKET}/${job.jobId}/savepoints/`);
    await request('stop1', 'stop');
    await until('the stop', async () => (await job.item<RequestItem>(ControlKeys.request('stop1')))?.status === 'succeeded');
    await run; // the supervisor ends once halted
    await workers.stop();
    const control = await job.control();
    const stop = await job.item<RequestItem>(ControlKeys.request('stop1'));
    expect(control?.halted?.checkpointId).toBe(stop?.result?.checkpointId);
    expect(control?.sinkCommittedThrough).toBe(stop?.result?.checkpointId);
    await expectSinkEqualsReference(job);
    // Both savepoints have their own copies; their staging folders in checkpoint storage are gone.
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const folders = await storage.store.listFolders('');
    for (const r of [sp, stop]) expect(folders).not.toContain(checkpointDirName(r?.result?.checkpointId ?? -1));
  });
});
