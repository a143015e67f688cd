import { DescribeTableCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { MarkerConfig, ResolvedMarkerConfig } from './committable.ts';
import { DynamoDbSinkError } from './errors.ts';

const MARKER_SORT_VALUE = '#sluice-commit';

/**
 * Fills in the value commit markers put into the marker table's sort key, after the key's type (one DescribeTable
 * call, only when the sort key has no configured value). Checks on the way that the partition key is a string,
 * which markers need. Without permission to describe the table, markers use a string and DynamoDB judges.
 */
export async function resolveMarkerConfig(client: DynamoDBClient, config: MarkerConfig): Promise<ResolvedMarkerConfig> {
  const sortKey = config.sortKey;
  if (sortKey === undefined) return { ...config, sortKey: undefined };
  if (sortKey.value !== undefined) return { ...config, sortKey: { name: sortKey.name, value: sortKey.value } };
  let types: Map<string, string> | undefined;
  try {
    const table = (await client.send(new DescribeTableCommand({ TableName: config.table }))).Table;
    types = new Map((table?.AttributeDefinitions ?? []).map((d) => [d.AttributeName ?? '', d.AttributeType ?? '']));
  } catch {
    types = undefined;
  }
  const partitionType = types?.get(config.partitionKey);
  if (partitionType !== undefined && partitionType !== 'S') {
    throw new DynamoDbSinkError(
      `DynamoDB sink: commit markers need a string partition key, but ${config.partitionKey} of table ${config.table} is of type ${partitionType}; ` +
        'give the sink a separate marker table (option marker.table, partition key "pk" of type S)',
      { retriable: false },
    );
  }
  const sortType = types?.get(sortKey.name) ?? 'S';
  const value: AttributeValue =
    sortType === 'N' ? { N: '0' } : sortType === 'B' ? { B: Buffer.from(MARKER_SORT_VALUE, 'utf8') } : { S: MARKER_SORT_VALUE };
  return { ...config, sortKey: { name: sortKey.name, value } };
}
