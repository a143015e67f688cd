// S3: checkpoint storage (with its commit point) and a dead-letter writer.
export { S3CheckpointStorage } from './s3-checkpoint-storage.ts';
export type { S3CheckpointStorageOptions } from './s3-checkpoint-options.ts';
export { openS3CheckpointStorage, openCheckpointStorage, openSavepointStorage, S3_STORAGE_MODULE_URL } from './open-s3-checkpoint-storage.ts';
export type { OpenCheckpointStorageOptions } from './open-s3-checkpoint-storage.ts';
export type { CommitMode } from './commit-point.ts';
export { COMMIT_TABLE_PARTITION_KEY, COMMIT_TABLE_SORT_KEY } from './dynamodb-commit-point.ts';
export { ensureCheckpointCommitTable } from './ensure-commit-table.ts';
export { S3ObjectStore } from './s3-object-store.ts';
export { S3DeadLetterWriter, s3DeadLetterWriter, S3DeadLetterError } from './s3-dead-letter-writer.ts';
export type { S3DeadLetterWriterOptions } from './s3-dead-letter-writer.ts';
export { parseS3Uri } from './s3-location.ts';
export type { S3Location, ParsedS3Uri } from './s3-location.ts';
