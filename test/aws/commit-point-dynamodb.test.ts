import { afterAll, beforeAll } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { CheckpointCommitPoint } from '../../lib/storage/commit-point.ts';
import { DynamoDbCommitPoint } from '../../lib/connectors/aws/s3/dynamodb-commit-point.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { runCommitPointContract } from '../contract/commit-point.contract.ts';
import { lostResponse, s3CommitFaults } from '../contract/commit-point-faults.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';
import { InMemoryS3 } from '../harness/in-memory-s3.ts';

const TABLE = 'checkpoint-commits';
const UPLOAD = { partSizeBytes: 8 * 1024 * 1024, queueSize: 2 };

/** The one place this runner builds the implementation. */
function createCommitPoint(client: DynamoDBClient, table: string, objects: S3Objects): CheckpointCommitPoint {
  return new DynamoDbCommitPoint(client, table, objects);
}

let dynamo: DynamoDbLocal;
let locations = 0;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
  await ensureCheckpointCommitTable(TABLE, { client: dynamo.client });
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

/** How the next conditional PutItem of the commit table goes wrong, if at all. */
type PutItemFault = 'lose-and-resend' | 'lose' | undefined;

// DynamoDB Local decides; the metadata objects go to the in-memory S3 (what S3 does is not what is tested here).
runCommitPointContract('DynamoDbCommitPoint on DynamoDB Local', async () => {
  const s3 = new InMemoryS3();
  const s3Client = s3.client();
  const objects = new S3Objects(s3Client, { bucket: 'checkpoints', prefix: `job-${++locations}` }, UPLOAD);
  let fault: PutItemFault;
  const client = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler(), maxAttempts: 1 });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'PutItemCommand' || fault === undefined) return next(args);
      const now = fault;
      fault = undefined;
      await next(args);
      if (now === 'lose') throw lostResponse();
      return next(args);
    },
    { step: 'initialize', name: 'commitFaults' },
  );
  return {
    commitPoint: () => createCommitPoint(client, TABLE, objects),
    readObject: (path) => objects.getBytes(path),
    faults: {
      loseDecidingResponseAndResend: () => (fault = 'lose-and-resend'),
      loseDecidingResponse: () => (fault = 'lose'),
      failMetadataWrite: s3CommitFaults(s3, () => false).failMetadataWrite,
    },
    dispose: async () => {
      client.destroy();
      s3Client.destroy();
    },
  };
});
