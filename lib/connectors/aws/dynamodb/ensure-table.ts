import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../../../core/index.ts';
import { awsClientConfig, type AwsClientOverrides } from '../client-config.ts';
import { sleep } from '../kinesis/backoff.ts';
import { DynamoDbSinkError } from './errors.ts';

export interface KeyAttribute {
  readonly name: string;
  /** @default 'S' */
  readonly type?: 'S' | 'N' | 'B';
}

export interface EnsureTableOptions {
  readonly tableName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Turns on DynamoDB's time to live on this attribute (epoch seconds), e.g. for expiring commit markers. */
  readonly timeToLiveAttribute?: string;
  /** How long to wait for a new table to become ACTIVE. @default 60000 */
  readonly timeoutMs?: number;
  readonly client?: DynamoDBClient;
  /** Client settings when no `client` is given. */
  readonly aws?: AwsClientOverrides;
}

function errorName(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? ((error as { name?: string }).name ?? undefined) : undefined;
}

/**
 * Creates a table (on-demand capacity) unless it exists, and waits until it is ACTIVE. An existing table must have
 * the given key schema (ConfigError otherwise). Returns whether it created the table. For tests, local setups and
 * tools; production tables belong in infrastructure code (infra/).
 */
export async function ensureTable(options: EnsureTableOptions): Promise<'created' | 'exists'> {
  const client = options.client ?? new DynamoDBClient(awsClientConfig('dynamodb', options.aws));
  try {
    const keys = [options.partitionKey, ...(options.sortKey === undefined ? [] : [options.sortKey])];
    const schema: KeySchemaElement[] = keys.map((k, i) => ({ AttributeName: k.name, KeyType: i === 0 ? 'HASH' : 'RANGE' }));
    const definitions: AttributeDefinition[] = keys.map((k) => ({ AttributeName: k.name, AttributeType: k.type ?? 'S' }));
    let outcome: 'created' | 'exists' = 'created';
    try {
      await client.send(
        new CreateTableCommand({ TableName: options.tableName, KeySchema: schema, AttributeDefinitions: definitions, BillingMode: 'PAY_PER_REQUEST' }),
      );
    } catch (error) {
      if (errorName(error) !== 'ResourceInUseException') {
        throw new DynamoDbSinkError(`cannot create DynamoDB table ${options.tableName}`, { cause: error, retriable: true });
      }
      outcome = 'exists';
    }
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const table = (await client.send(new DescribeTableCommand({ TableName: options.tableName }))).Table;
      const actual = (table?.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
      const wanted = schema.map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
      if (actual !== wanted) {
        throw new ConfigError(`DynamoDB table ${options.tableName} exists with key schema ${actual}, not ${wanted}`);
      }
      if (table?.TableStatus === 'ACTIVE') break;
      if (Date.now() > deadline) {
        throw new DynamoDbSinkError(`DynamoDB table ${options.tableName} is still ${table?.TableStatus ?? 'unknown'}`, { retriable: true });
      }
      await sleep(500);
    }
    if (options.timeToLiveAttribute !== undefined && outcome === 'created') {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: options.tableName,
          TimeToLiveSpecification: { AttributeName: options.timeToLiveAttribute, Enabled: true },
        }),
      );
    }
    return outcome;
  } finally {
    if (options.client === undefined) client.destroy();
  }
}
