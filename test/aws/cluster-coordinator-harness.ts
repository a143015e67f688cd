import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { type DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { ControlKeys, jobPartition, type AckItem, type ClusterConfigItem, type ControlItem } from '../../lib/cluster/control-items.ts';
import { checkpointDirName } from '../../lib/checkpoint/naming.ts';
import { encodeSlotCommittables, slotCommittablesName } from '../../lib/cluster/slot-committables.ts';
import { dynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import type { SinkCommitRegistry } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { DEFAULT_SINK_COMMIT_REGISTRY } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { openS3CheckpointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import { useSettings, type CoordinatorSettings } from '../../functions/coordinator/settings.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';

export const CONTROL = 'control';
export const COMMITS = 'commits';
export const SINK = 'sink-table';
export const BUCKET = 'ckpt';
export const P = 2;

export let dynamo: DynamoDbLocal;
export let s3: S3Emulator;
let jobs = 0;

/** Starts DynamoDB Local and the S3 emulator for the calling test file, with the control, sink and commit tables. */
export function useCoordinatorEmulators(): void {
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
}

export async function until(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Job {
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
export async function newJob(options: { cycleSeconds?: number; registry?: SinkCommitRegistry; intervalMs?: number; timeoutMs?: number } = {}): Promise<Job> {
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
export function fakeWorkers(job: Job, options: { beforeAck?: (checkpointId: number) => Promise<void>; skip?: (checkpointId: number, slot: number) => boolean } = {}): { stop(): Promise<void> } {
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
export async function sinkRows(job: Job): Promise<Map<string, { total: number; lastCheckpoint: number }>> {
  const out = await dynamo.client.send(new ScanCommand({ TableName: SINK, ConsistentRead: true }));
  const rows = new Map<string, { total: number; lastCheckpoint: number }>();
  for (const raw of out.Items ?? []) {
    const item = unmarshall(raw) as { pk: string; total?: number; lastCheckpoint?: number };
    if (item.pk.startsWith(`${job.jobId}-slot-`)) rows.set(item.pk, { total: item.total ?? 0, lastCheckpoint: item.lastCheckpoint ?? 0 });
  }
  return rows;
}

/** Every committed checkpoint added exactly once to every slot's counter; sinkCommittedThrough covers the last. */
export async function expectSinkEqualsReference(job: Job): Promise<void> {
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
