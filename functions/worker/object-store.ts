import { isRemoteLocation } from '../../lib/storage/storage-locations.ts';
import { FsObjectStore } from '../../lib/storage/fs/fs-object-store.ts';
import type { ObjectStore } from '../../lib/storage/object-store.ts';
import { ConfigError } from '../../lib/core/index.ts';
import { createS3Client } from '../../lib/connectors/aws/s3/s3-client.ts';
import { checkBucketName, parseS3Uri } from '../../lib/connectors/aws/s3/s3-location.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';

/** Task state files are small per slot and checkpoint: uploads of this size go up in one or a few parts. */
const UPLOAD = { partSizeBytes: 16 * 1024 * 1024, queueSize: 4 } as const;

/**
 * The checkpoint storage's objects for a worker (`--checkpoint-dir`): an S3 prefix (endpoint and credentials from
 * the SDK's chains and AWS_ENDPOINT_URL), or a local folder (tests, a one-machine dev cluster).
 */
export function openWorkerObjectStore(location: string): ObjectStore {
  if (!isRemoteLocation(location)) return new FsObjectStore(location);
  const parsed = parseS3Uri(location);
  const context = `--checkpoint-dir ${location}`;
  if (parsed.params.size > 0) throw new ConfigError(`${context}: a worker's checkpoint location takes no parameters (the control table fences commits)`);
  // Path-style addressing follows a configured endpoint (an emulator), as for checkpoint storage.
  const objects = new S3Objects(createS3Client(undefined, undefined), { bucket: checkBucketName(parsed.bucket, context), prefix: parsed.prefix }, UPLOAD);
  return new S3ObjectStore(objects);
}
