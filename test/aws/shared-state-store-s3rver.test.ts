import { afterAll, beforeAll } from 'vitest';
import type { S3Client } from '@aws-sdk/client-s3';
import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { ObjectSharedState } from '../../lib/storage/object-shared-state.ts';
import { runSharedStateStoreContract, type ListableSharedStateStore } from '../contract/shared-state-store.contract.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';

const BUCKET = 'shared-state';
const UPLOAD = { partSizeBytes: 5 * 1024 * 1024, queueSize: 2 };

/** The one place this runner builds the implementation. */
function createSharedStateStore(client: S3Client, bucket: string, prefix: string): ListableSharedStateStore {
  return new ObjectSharedState(new S3ObjectStore(new S3Objects(client, { bucket, prefix }, UPLOAD)));
}

let s3: S3Emulator;
let locations = 0;

beforeAll(async () => {
  s3 = await startS3Emulator({ buckets: [BUCKET] });
});

afterAll(async () => {
  await s3?.stop();
});

runSharedStateStoreContract('ObjectSharedState over S3ObjectStore on s3rver', async () => {
  const prefix = `jobs/job-${++locations}`;
  return {
    store: () => createSharedStateStore(s3.client, BUCKET, prefix),
    dispose: async () => undefined,
  };
});
