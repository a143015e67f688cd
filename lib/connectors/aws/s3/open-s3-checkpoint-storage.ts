import { ConfigError } from '../../../core/index.ts';
import type { CommitMode } from './commit-point.ts';
import type { S3CheckpointStorageOptions } from './s3-checkpoint-options.ts';
import { S3CheckpointStorage } from './s3-checkpoint-storage.ts';
import { ObjectSavepointStorage } from '../../../storage/object-savepoint-storage.ts';
import { createS3Client } from './s3-client.ts';
import { checkBucketName, parseS3Uri } from './s3-location.ts';
import { S3ObjectStore } from './s3-object-store.ts';
import { S3Objects } from './s3-objects.ts';

/** Everything of `S3CheckpointStorageOptions` but the location, which the URI gives. */
export interface OpenCheckpointStorageOptions extends Omit<S3CheckpointStorageOptions, 'bucket' | 'prefix'> {
  /** Where SLUICE_CHECKPOINT_COMMIT_TABLE / SLUICE_CHECKPOINT_COMMIT_MODE are read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const URI_PARAMETERS = new Set(['commitTable', 'commitMode']);

function commitModeOf(value: string | undefined, source: string): CommitMode | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'dynamodb' || value === 's3-conditional') return value;
  throw new ConfigError(`${source}: the commit mode must be 'dynamodb' or 's3-conditional', got "${value}"`);
}

/**
 * Checkpoint storage for `--checkpoint-dir s3://bucket/prefix[?commitTable=NAME&commitMode=MODE]`. The commit
 * table and mode come from the options, else the URI's parameters, else SLUICE_CHECKPOINT_COMMIT_TABLE and
 * SLUICE_CHECKPOINT_COMMIT_MODE. ConfigError for a malformed URI, an unknown parameter or a missing commit table.
 */
export function openS3CheckpointStorage(uri: string, options: OpenCheckpointStorageOptions = {}): S3CheckpointStorage {
  const parsed = parseS3Uri(uri);
  for (const name of parsed.params.keys()) {
    if (!URI_PARAMETERS.has(name)) {
      throw new ConfigError(`S3 location "${uri}": unknown parameter "${name}" (known: ${[...URI_PARAMETERS].join(', ')})`);
    }
  }
  const env = options.env ?? process.env;
  const { env: _env, ...rest } = options;
  const commitMode =
    options.commitMode ??
    commitModeOf(parsed.params.get('commitMode'), `S3 location "${uri}"`) ??
    commitModeOf(env['SLUICE_CHECKPOINT_COMMIT_MODE'], 'SLUICE_CHECKPOINT_COMMIT_MODE');
  const commitTable = options.commitTable ?? parsed.params.get('commitTable') ?? (env['SLUICE_CHECKPOINT_COMMIT_TABLE'] || undefined);
  return new S3CheckpointStorage({
    ...rest,
    bucket: parsed.bucket,
    prefix: parsed.prefix,
    ...(commitMode === undefined ? {} : { commitMode }),
    ...(commitTable === undefined ? {} : { commitTable }),
  });
}

/** The same factory under the name the connector API (and StorageSchemeModule) uses. */
export const openCheckpointStorage = openS3CheckpointStorage;

/**
 * Savepoint storage at `s3://bucket/prefix`: one self-contained `savepoint-<id>-<ms>/` folder per savepoint
 * (StorageSchemeModule's other half). Region, endpoint and credentials come from the SDK's default chains.
 */
export function openSavepointStorage(uri: string, options: Pick<OpenCheckpointStorageOptions, 'aws' | 'forcePathStyle' | 's3Client'> = {}): ObjectSavepointStorage {
  const parsed = parseS3Uri(uri);
  const context = `S3 savepoint location "${uri}"`;
  if (parsed.params.size > 0) throw new ConfigError(`${context}: takes no parameters`);
  const client = options.s3Client ?? createS3Client(options.aws, options.forcePathStyle);
  const objects = new S3Objects(client, { bucket: checkBucketName(parsed.bucket, context), prefix: parsed.prefix }, { partSizeBytes: SAVEPOINT_PART_SIZE, queueSize: 4 });
  return new ObjectSavepointStorage(new S3ObjectStore(objects));
}

const SAVEPOINT_PART_SIZE = 16 * 1024 * 1024;

/**
 * The URL of this module, to register for `s3://` locations (registerStorageScheme) without importing it: the
 * engine loads it only when a job's checkpoints are in S3.
 */
export const S3_STORAGE_MODULE_URL = import.meta.url;
