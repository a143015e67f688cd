// The emulated AWS stack of examples/kinesis-to-dynamodb.ts: kinesalite, s3rver and DynamoDB Local, a stream fed
// with JSON transactions, a bucket and a checkpoint commit table. Used by its tests and by `npm run dev:aws`.
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ensureCheckpointCommitTable } from '../../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { createStream, putRecords, startKinesisEmulator, type KinesisEmulator } from './kinesis-emulator.ts';
import { startS3Emulator, type S3Emulator } from './s3-emulator.ts';

export const BUCKET = 'sluice-dev';
export const COMMIT_TABLE = 'sluice-checkpoint-commits';

export interface ExampleStack {
  readonly kinesis: KinesisEmulator;
  readonly s3: S3Emulator;
  readonly dynamodb: DynamoDbLocal;
  readonly kinesisClient: KinesisClient;
  /** Environment for a `sluice run` child process: endpoints, region, credentials, commit table. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startExampleStack(): Promise<ExampleStack> {
  const [kinesis, s3, dynamodb] = await Promise.all([startKinesisEmulator(), startS3Emulator({ buckets: [BUCKET] }), startDynamoDbLocal()]);
  const kinesisClient = new KinesisClient({ ...kinesis.clientConfig, requestHandler: new NodeHttpHandler() });
  await ensureCheckpointCommitTable(COMMIT_TABLE, { client: dynamodb.client });
  const env = {
    AWS_ENDPOINT_URL_KINESIS: kinesis.endpoint,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: dynamodb.endpoint,
    AWS_REGION: 'us-east-1',
    // s3rver accepts only its own key; kinesalite and DynamoDB Local accept any.
    AWS_ACCESS_KEY_ID: s3.clientConfig.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.clientConfig.credentials.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    SLUICE_CHECKPOINT_COMMIT_TABLE: COMMIT_TABLE,
  };
  return {
    kinesis,
    s3,
    dynamodb,
    kinesisClient,
    env,
    async stop() {
      kinesisClient.destroy();
      await Promise.allSettled([kinesis.stop(), s3.stop(), dynamodb.stop()]);
    },
  };
}

/** Creates `stream` with `shards` shards and puts one record per JSONL line, partition key = the account. */
export async function feedTransactions(stack: ExampleStack, stream: string, shards: number, jsonl: string): Promise<number> {
  await createStream(stack.kinesisClient, stream, shards);
  const lines = jsonl.split('\n').filter((l) => l !== '');
  const records = lines.map((line) => {
    let key = 'malformed';
    try {
      const parsed = JSON.parse(line) as { account?: unknown };
      if (typeof parsed.account === 'string') key = parsed.account;
    } catch {
      // A malformed line still goes in: the job must send it to its dead letters.
    }
    return { key, data: Buffer.from(line, 'utf8') };
  });
  await putRecords(stack.kinesisClient, stream, records);
  return records.length;
}

/** The job's window totals in `table`, as sorted JSON lines in the fraud-detection output format. */
export async function tableLines(stack: ExampleStack, table: string): Promise<string[]> {
  const lines: string[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await stack.dynamodb.client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const row = unmarshall(item) as Record<string, unknown>;
      if (typeof row['account'] === 'string' && row['account'].startsWith('#sluice-commit#')) continue;
      lines.push(
        JSON.stringify({
          account: row['account'],
          windowStart: Number(row['windowStart']),
          windowEnd: Number(row['windowEnd']),
          count: Number(row['count']),
          totalCents: Number(row['totalCents']),
        }),
      );
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return lines.sort();
}
