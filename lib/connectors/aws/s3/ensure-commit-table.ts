import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AwsClientOverrides } from '../client-config.ts';
import { ensureTable } from '../dynamodb/ensure-table.ts';
import { COMMIT_TABLE_PARTITION_KEY, COMMIT_TABLE_SORT_KEY } from './dynamodb-commit-point.ts';

/** Creates the commit table of S3 checkpoint storage's 'dynamodb' commit mode unless it exists. */
export function ensureCheckpointCommitTable(
  tableName: string,
  options: { client?: DynamoDBClient; aws?: AwsClientOverrides } = {},
): Promise<'created' | 'exists'> {
  return ensureTable({
    tableName,
    partitionKey: { name: COMMIT_TABLE_PARTITION_KEY, type: 'S' },
    sortKey: { name: COMMIT_TABLE_SORT_KEY, type: 'N' },
    ...options,
  });
}
