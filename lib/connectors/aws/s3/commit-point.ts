export type { CheckpointCommitPoint, CommitRecord } from '../../../storage/commit-point.ts';

/** How a checkpoint's metadata becomes committed on S3 (see docs/connectors/s3-checkpoints.md). */
export type CommitMode = 'dynamodb' | 's3-conditional';
