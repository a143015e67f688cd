import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  StreamEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  generatorSource,
  runInThisThread,
  type Transaction,
} from '../../lib/index.ts';
import { dynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { S3_STORAGE_MODULE_URL, openS3CheckpointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import { registerStorageScheme } from '../../lib/storage/storage-locations.ts';

// The job runs without the CLI: this file is its composition root and says who serves s3:// locations.
registerStorageScheme('s3', S3_STORAGE_MODULE_URL);
import { countAndSum } from '../../bench/count-and-sum.ts';
import { failOnceAt, generatedTransactions } from '../harness/generated-transactions.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

/*
 * End to end: a windowed job checkpointing to s3:// (commit records in DynamoDB Local) writes per-account totals
 * with non-idempotent ADDs through the transactional DynamoDB sink, fails mid-run and restarts from its latest
 * checkpoint. Every client finds the emulators through AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL_DYNAMODB, as a job
 * would find LocalStack. A window counted twice or lost would show in the totals.
 */

const COMMIT_TABLE = 'sluice-commits';
const TOTALS_TABLE = 'account-totals';
const ENV_KEYS = [
  'AWS_ENDPOINT_URL_S3',
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'SLUICE_CHECKPOINT_COMMIT_TABLE',
] as const;

let s3: S3Emulator;
let dynamo: DynamoDbLocal;
const savedEnv: Partial<Record<(typeof ENV_KEYS)[number], string | undefined>> = {};

beforeAll(async () => {
  [s3, dynamo] = await Promise.all([startS3Emulator({ buckets: ['jobs'] }), startDynamoDbLocal()]);
  for (const key of ENV_KEYS) savedEnv[key] = process.env[key];
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_REGION: 'us-east-1',
    // s3rver checks signatures against its one account; DynamoDB Local (shared database) takes any key.
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    SLUICE_CHECKPOINT_COMMIT_TABLE: COMMIT_TABLE,
  });
  await ensureCheckpointCommitTable(COMMIT_TABLE, { client: dynamo.client });
  await ensureTable({ tableName: TOTALS_TABLE, partitionKey: { name: 'account' }, client: dynamo.client });
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  for (const key of ENV_KEYS) {
    if (savedEnv[key] === undefined) delete process.env[key];
    else process.env[key] = savedEnv[key];
  }
  await Promise.all([s3?.stop(), dynamo?.stop()]);
});

interface Row {
  readonly account: string;
  readonly count: number;
  readonly total: number;
}

const EVENTS = 12_000;
const SOURCE = { count: EVENTS, keyCount: 20, seed: 11, startTime: 0, eventIntervalMs: 1 };

async function expected(): Promise<{ totals: Record<string, { count: number; total: number }>; windows: number }> {
  const totals: Record<string, { count: number; total: number }> = {};
  const windows = new Set<string>();
  for (const t of await generatedTransactions(SOURCE)) {
    const acc = (totals[t.account] ??= { count: 0, total: 0 });
    acc.count++;
    acc.total += t.amountCents;
    windows.add(`${t.account}@${t.ts - (t.ts % 500)}`);
  }
  return { totals, windows: windows.size };
}

function buildJob(failAt: { ts: number; armed: boolean }): StreamEnvironment {
  const env = new StreamEnvironment({ parallelism: 2, batchSize: 100 });
  env
    .fromSource(generatorSource({ ...SOURCE, ratePerSecond: 30_000 }), WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(0))
    .map(failOnceAt(failAt))
    .keyBy((t) => t.account)
    .window(TumblingEventTimeWindows.of(500))
    .aggregate(
      countAndSum,
      (a, account): Row => ({ account, count: a.count, total: a.total }),
    )
    .sinkTo(
      dynamoDbSink<Row>({
        table: TOTALS_TABLE,
        partitionKey: 'account',
        toWrites: (r) => ({ type: 'update', key: { account: r.account }, add: { count: r.count, total: r.total, windows: 1 } }),
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      }),
    );
  return env;
}

describe('DynamoDB sink in a job checkpointing to S3', () => {
  it('a failure mid-run restarts from the latest S3 checkpoint and every window is added exactly once', async () => {
    const failAt = { ts: 7_000, armed: true };
    const logs: string[] = [];
    await runInThisThread(buildJob(failAt), {
      checkpointing: { dir: 's3://jobs/totals', intervalMs: 50 },
      restart: { kind: 'fixed-delay', attempts: 2, delayMs: 10 },
      log: (l) => logs.push(l),
    });
    expect(failAt.armed).toBe(false);
    expect(logs.some((l) => /restored from checkpoint \d+/.test(l))).toBe(true);

    const page = await dynamo.client.send(new ScanCommand({ TableName: TOTALS_TABLE, ConsistentRead: true }));
    const actual: Record<string, { count: number; total: number }> = {};
    let windows = 0;
    for (const item of page.Items ?? []) {
      const row = unmarshall(item);
      if (String(row['account']).startsWith('#sluice-commit#')) continue;
      actual[String(row['account'])] = { count: row['count'] as number, total: row['total'] as number };
      windows += row['windows'] as number;
    }
    const reference = await expected();
    expect(actual).toEqual(reference.totals);
    expect(windows).toBe(reference.windows);

    // The checkpoints are in S3 and vouched for by the commit table.
    const storage = openS3CheckpointStorage('s3://jobs/totals');
    const listed = await storage.list();
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((c) => c.status === 'complete')).toBe(true);
    storage.close();
  });
});
