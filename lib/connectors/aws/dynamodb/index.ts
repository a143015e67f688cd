// DynamoDB: the exactly-once (or idempotent upsert) sink and a table helper.
export { dynamoDbSink } from './dynamodb-sink.ts';
export type { DynamoDbSink } from './dynamodb-sink.ts';
export type { DynamoDbSinkOptions, DynamoDbSinkMode, DynamoDbMarkerOptions } from './dynamodb-sink-options.ts';
export type { DynamoDbWrite, DynamoDbAttributes, DynamoDbKeySchema } from './write-ops.ts';
export type { DynamoDbCommittable } from './committable.ts';
export type { DynamoDbChunk } from './transact-items.ts';
export { DynamoDbSinkWriter } from './dynamodb-writer.ts';
export { DynamoDbCommitter } from './dynamodb-committer.ts';
export type { DynamoDbCommitStats } from './transactional-commit.ts';
export { DynamoDbSinkError } from './errors.ts';
export { ensureTable } from './ensure-table.ts';
export type { EnsureTableOptions, KeyAttribute } from './ensure-table.ts';
