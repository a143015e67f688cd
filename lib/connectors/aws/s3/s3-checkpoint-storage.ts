import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { StorageLease } from '../../../storage/checkpoint-storage.ts';
import type { CheckpointCommitPoint } from '../../../storage/commit-point.ts';
import { ObjectCheckpointStorage } from '../../../storage/object-checkpoint-storage.ts';
import { ObjectCommitPoint } from '../../../storage/object-commit-point.ts';
import { awsClientConfig } from '../client-config.ts';
import type { CommitMode } from './commit-point.ts';
import { DynamoDbCommitPoint } from './dynamodb-commit-point.ts';
import { DynamoDbLease } from './dynamodb-lease.ts';
import { compileS3CheckpointOptions, type S3CheckpointStorageOptions } from './s3-checkpoint-options.ts';
import { createS3Client } from './s3-client.ts';
import { S3ObjectStore } from './s3-object-store.ts';
import { S3Objects } from './s3-objects.ts';

/** What the constructor assembles before handing the store and commit point to ObjectCheckpointStorage. */
interface Assembled {
  readonly store: S3ObjectStore;
  readonly commitPoint: CheckpointCommitPoint;
  readonly acquireLease: (() => Promise<StorageLease>) | undefined;
  readonly ownClients: { destroy(): void }[];
}

function assemble(options: S3CheckpointStorageOptions): Assembled {
  const compiled = compileS3CheckpointOptions(options);
  const ownClients: { destroy(): void }[] = [];
  let s3 = options.s3Client;
  if (s3 === undefined) {
    s3 = createS3Client(options.aws, options.forcePathStyle);
    ownClients.push(s3);
  }
  const objects = new S3Objects(s3, compiled, { partSizeBytes: compiled.partSizeBytes, queueSize: compiled.uploadConcurrency });
  const store = new S3ObjectStore(objects);
  if (compiled.commitMode === 's3-conditional') {
    return { store, commitPoint: new ObjectCommitPoint(store, { mode: 's3-conditional', identicalRetrySucceeds: true }), acquireLease: undefined, ownClients };
  }
  let dynamo = options.dynamoDbClient;
  if (dynamo === undefined) {
    dynamo = new DynamoDBClient(awsClientConfig('dynamodb', options.aws));
    ownClients.push(dynamo);
  }
  const table = compiled.commitTable as string;
  const client = dynamo;
  return {
    store,
    commitPoint: new DynamoDbCommitPoint(client, table, objects),
    acquireLease: () => DynamoDbLease.acquire(client, table, objects.url()),
    ownClients,
  };
}

/**
 * Checkpoints in S3 under `s3://bucket/prefix`, laid out as the filesystem storage lays out a folder:
 * `chk-<id>/task-<v>-<s>.state`, `chk-<id>/_metadata`, `shared/<name>`: the object-store checkpoint storage over
 * S3. Task files and shared files go up whole (multipart above the part size) and carry their sha256 as object
 * metadata; reads verify size and sha256.
 *
 * S3 overwrites objects silently, so "the metadata object exists" cannot be the commit. The commit point (see
 * `commitMode`) makes exactly one writer win a checkpoint id, and `list`/`latestComplete` trust a metadata object
 * only when the commit point vouches for it. One writing job per location: `removeIncomplete` deletes what another
 * process may be writing. With a commit table, a lease item there (see DynamoDbLease) makes this job the only one
 * on the location; in 's3-conditional' mode there is none, and one job per location is the user's to ensure.
 */
export class S3CheckpointStorage extends ObjectCheckpointStorage {
  readonly commitMode: CommitMode;
  readonly store: S3ObjectStore;
  private readonly ownClients: { destroy(): void }[];

  constructor(options: S3CheckpointStorageOptions) {
    const assembled = assemble(options);
    super(assembled.store, {
      commitPoint: assembled.commitPoint,
      ...(assembled.acquireLease === undefined ? {} : { acquireLease: assembled.acquireLease }),
    });
    this.store = assembled.store;
    this.commitMode = assembled.commitPoint.mode as CommitMode;
    this.ownClients = assembled.ownClients;
  }

  /** Destroys the clients this storage created. */
  close(): void {
    for (const client of this.ownClients.splice(0)) client.destroy();
  }
}
