import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { ObjectCommitPoint } from '../../lib/storage/object-commit-point.ts';
import type { CheckpointCommitPoint } from '../../lib/storage/commit-point.ts';
import { InMemoryS3 } from '../harness/in-memory-s3.ts';
import { runCommitPointContract } from './commit-point.contract.ts';
import { s3CommitFaults } from './commit-point-faults.ts';

const UPLOAD = { partSizeBytes: 8 * 1024 * 1024, queueSize: 2 };

/** The one place this runner builds the implementation. */
function createCommitPoint(objects: S3Objects): CheckpointCommitPoint {
  // As S3CheckpointStorage builds it for the s3-conditional commit mode.
  return new ObjectCommitPoint(new S3ObjectStore(objects), { mode: 's3-conditional', identicalRetrySucceeds: true });
}

let locations = 0;

// On the in-memory S3 fake, which honours If-None-Match as S3 does; s3rver ignores the header, so it cannot run this.
runCommitPointContract('s3-conditional commit point (ObjectCommitPoint over S3ObjectStore) on in-memory S3', async () => {
  const s3 = new InMemoryS3();
  const client = s3.client();
  const objects = new S3Objects(client, { bucket: 'checkpoints', prefix: `job-${++locations}` }, UPLOAD);
  return {
    commitPoint: () => createCommitPoint(objects),
    readObject: (path) => objects.getBytes(path),
    faults: s3CommitFaults(s3, (input) => input['IfNoneMatch'] === '*'),
    dispose: async () => client.destroy(),
  };
});
