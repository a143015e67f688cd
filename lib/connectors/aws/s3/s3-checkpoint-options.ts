import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigError } from '../../../core/index.ts';
import { configuredEndpoint, type AwsClientOverrides } from '../client-config.ts';
import type { CommitMode } from './commit-point.ts';
import { checkBucketName, normalizePrefix } from './s3-location.ts';

export interface S3CheckpointStorageOptions {
  readonly bucket: string;
  /** Key prefix ("folder") of the job's checkpoints. @default '' (the bucket's root) */
  readonly prefix?: string;
  /**
   * How a checkpoint becomes complete. 'dynamodb': a conditional put on an item of `commitTable`, then the metadata
   * object (works with every S3-compatible store). 's3-conditional': the metadata object written with
   * `If-None-Match: *` (needs S3's conditional writes; no table).
   * @default 'dynamodb' when a commit table is given, an endpoint is configured (option or AWS_ENDPOINT_URL[_S3]:
   * emulators and LocalStack, which may ignore conditional writes) or `s3Client` is passed; else (AWS S3 itself)
   * 's3-conditional'
   */
  readonly commitMode?: CommitMode;
  /** DynamoDB table of commit records (key `location` S, sort key `checkpointId` N); required in 'dynamodb' mode. */
  readonly commitTable?: string;
  /** Part size of multipart uploads; smaller files go up in one PutObject. At least 5 MiB. @default 16 MiB */
  readonly partSizeBytes?: number;
  /** Parts of one file uploaded at once (each buffered in memory). @default 4 */
  readonly uploadConcurrency?: number;
  /** Region, endpoint, credentials... for both clients; unset values come from the SDK's default chains. */
  readonly aws?: AwsClientOverrides;
  /**
   * Path-style addressing (`http://host/bucket/key`), which emulators need.
   * @default true when an endpoint is configured (option or AWS_ENDPOINT_URL[_S3]), else false
   */
  readonly forcePathStyle?: boolean;
  /** Use this client instead of creating one (it is not destroyed by `close`). */
  readonly s3Client?: S3Client;
  /** Use this client instead of creating one (it is not destroyed by `close`). */
  readonly dynamoDbClient?: DynamoDBClient;
}

export interface CompiledS3CheckpointOptions {
  readonly bucket: string;
  readonly prefix: string;
  readonly commitMode: CommitMode;
  readonly commitTable: string | undefined;
  readonly partSizeBytes: number;
  readonly uploadConcurrency: number;
}

const MIN_PART_SIZE = 5 * 1024 * 1024;
const MAX_PART_SIZE = 5 * 1024 * 1024 * 1024;
const DEFAULT_PART_SIZE = 16 * 1024 * 1024;
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

function checkTableName(name: string, context: string): string {
  if (!TABLE_NAME.test(name)) {
    throw new ConfigError(`${context}: "${name}" is not a valid DynamoDB table name (3-255 characters: A-Z, a-z, 0-9, '_', '-', '.')`);
  }
  return name;
}

/**
 * The commit mode when none is chosen. AWS S3 has honoured `If-None-Match: *` since 2024, so it needs no table;
 * an endpoint override points at an emulator or LocalStack, where the DynamoDB commit point is the safe choice (s3rver
 * ignores the header). A given client may point anywhere, so it keeps the DynamoDB default too.
 */
function defaultCommitMode(options: S3CheckpointStorageOptions, env: NodeJS.ProcessEnv): CommitMode {
  const table = options.commitTable !== undefined && options.commitTable !== '';
  const endpoint = options.aws?.endpoint !== undefined || configuredEndpoint('s3', env) !== undefined || options.s3Client !== undefined;
  return table || endpoint ? 'dynamodb' : 's3-conditional';
}

export function compileS3CheckpointOptions(options: S3CheckpointStorageOptions, env: NodeJS.ProcessEnv = process.env): CompiledS3CheckpointOptions {
  const context = 'S3 checkpoint storage';
  const bucket = checkBucketName(options.bucket, context);
  const prefix = normalizePrefix(options.prefix ?? '', context);
  const commitMode = options.commitMode ?? defaultCommitMode(options, env);
  if (commitMode !== 'dynamodb' && commitMode !== 's3-conditional') {
    throw new ConfigError(`${context}: commitMode must be 'dynamodb' or 's3-conditional', got "${String(commitMode)}"`);
  }
  let commitTable: string | undefined;
  if (commitMode === 'dynamodb') {
    if (options.commitTable === undefined || options.commitTable === '') {
      throw new ConfigError(
        `${context} s3://${bucket}/${prefix}: commit mode 'dynamodb' needs a commit table: pass commitTable ` +
          '(or ?commitTable=NAME in the URI, or SLUICE_CHECKPOINT_COMMIT_TABLE), or use commitMode \'s3-conditional\' on AWS S3',
      );
    }
    commitTable = checkTableName(options.commitTable, context);
  }
  const partSizeBytes = options.partSizeBytes ?? DEFAULT_PART_SIZE;
  if (!Number.isSafeInteger(partSizeBytes) || partSizeBytes < MIN_PART_SIZE || partSizeBytes > MAX_PART_SIZE) {
    throw new ConfigError(`${context}: partSizeBytes must be an integer from 5 MiB to 5 GiB (S3's limits), got ${partSizeBytes}`);
  }
  const uploadConcurrency = options.uploadConcurrency ?? 4;
  if (!Number.isSafeInteger(uploadConcurrency) || uploadConcurrency < 1) {
    throw new ConfigError(`${context}: uploadConcurrency must be a positive integer, got ${uploadConcurrency}`);
  }
  return { bucket, prefix, commitMode, commitTable, partSizeBytes, uploadConcurrency };
}
