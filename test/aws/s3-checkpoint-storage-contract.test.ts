import { afterAll, beforeAll } from 'vitest';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { S3CheckpointStorage } from '../../lib/connectors/aws/s3/s3-checkpoint-storage.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { checkpointStorageContract } from '../contract/checkpoint-storage.contract.ts';
import { objectStoreContract } from '../contract/object-store.contract.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

const BUCKET = 'contract';
const COMMIT_TABLE = 'sluice-contract-commits';
const MiB = 1024 * 1024;

let s3: S3Emulator;
let dynamo: DynamoDbLocal;
let client: S3Client;
let counter = 0;

/**
 * s3rver ignores `If-None-Match: *`. This middleware gives the emulator S3's answer for one client: a conditional
 * PutObject waits for any other on the same key, then fails with 412 when the key exists. That is what real S3
 * guarantees, so the concurrent create-if-absent contract can run here too.
 */
function withConditionalWrites(s3Client: S3Client): S3Client {
  const busy = new Map<string, Promise<unknown>>();
  s3Client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Bucket?: string; Key?: string; IfNoneMatch?: string };
      if (context.commandName !== 'PutObjectCommand' || input.IfNoneMatch !== '*') return next(args);
      const key = `${input.Bucket ?? ''}/${input.Key ?? ''}`;
      const previous = busy.get(key) ?? Promise.resolve();
      const attempt = previous.catch(() => undefined).then(async () => {
        const exists = await s3Client.send(new HeadObjectCommand({ Bucket: input.Bucket, Key: input.Key })).then(
          () => true,
          () => false,
        );
        if (exists) {
          throw Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), {
            name: 'PreconditionFailed',
            $metadata: { httpStatusCode: 412 },
          });
        }
        return next(args);
      });
      busy.set(key, attempt);
      return attempt;
    },
    { step: 'initialize', name: 'conditionalWrites' },
  );
  return s3Client;
}

beforeAll(async () => {
  [s3, dynamo] = await Promise.all([startS3Emulator({ buckets: [BUCKET] }), startDynamoDbLocal()]);
  await ensureCheckpointCommitTable(COMMIT_TABLE, { client: dynamo.client });
  client = withConditionalWrites(new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() }));
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  client?.destroy();
  await Promise.all([s3?.stop(), dynamo?.stop()]);
});

objectStoreContract(
  'S3 prefix (S3ObjectStore, emulator)',
  () => Promise.resolve(new S3ObjectStore(new S3Objects(client, { bucket: BUCKET, prefix: `objects/${++counter}` }, { partSizeBytes: 5 * MiB, queueSize: 2 }))),
  { atomicCreate: true },
);

checkpointStorageContract('S3, commit mode dynamodb (emulators)', () => {
  const storage = new S3CheckpointStorage({
    bucket: BUCKET,
    prefix: `dynamodb/${++counter}`,
    commitTable: COMMIT_TABLE,
    s3Client: client,
    dynamoDbClient: dynamo.client,
  });
  return Promise.resolve({ storage, store: storage.store });
});

checkpointStorageContract('S3, commit mode s3-conditional (emulator)', () => {
  const storage = new S3CheckpointStorage({ bucket: BUCKET, prefix: `conditional/${++counter}`, commitMode: 's3-conditional', s3Client: client });
  return Promise.resolve({ storage, store: storage.store });
});
