import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { ObjectSharedState } from '../../lib/storage/object-shared-state.ts';
import type { S3Client } from '@aws-sdk/client-s3';
import { InMemoryS3 } from '../harness/in-memory-s3.ts';
import { runSharedStateStoreContract, type ListableSharedStateStore } from './shared-state-store.contract.ts';

const UPLOAD = { partSizeBytes: 5 * 1024 * 1024, queueSize: 2 };

/** The one place this runner builds the implementation. */
function createSharedStateStore(client: S3Client, bucket: string, prefix: string): ListableSharedStateStore {
  return new ObjectSharedState(new S3ObjectStore(new S3Objects(client, { bucket, prefix }, UPLOAD)));
}

let locations = 0;

// The same suite runs on s3rver in test/aws/shared-state-store-s3rver.test.ts; this one needs no emulator.
runSharedStateStoreContract('ObjectSharedState over S3ObjectStore on in-memory S3', async () => {
  const s3 = new InMemoryS3();
  const client = s3.client();
  const prefix = `jobs/job-${++locations}`;
  return {
    store: () => createSharedStateStore(client, 'checkpoints', prefix),
    dispose: async () => client.destroy(),
  };
});
