import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../../../core/index.ts';
import type { AwsClientOverrides } from '../client-config.ts';
import { compileRetry, type RetryOptions, type RetryPolicy } from '../kinesis/backoff.ts';
import type { MarkerConfig } from './committable.ts';
import type { ChunkLimits } from './transact-items.ts';
import type { DynamoDbKeySchema, DynamoDbWrite } from './write-ops.ts';

/** How committed writes reach the table (see docs/connectors/dynamodb.md). */
export type DynamoDbSinkMode = 'transactional' | 'upsert';

export interface DynamoDbMarkerOptions {
  /** Table of commit markers. @default the sink's table (markers then use the reserved key prefix) */
  readonly table?: string;
  /** Partition key attribute of the marker table; it must be of type S. @default the sink's partitionKey in the same table, else 'pk' */
  readonly partitionKey?: string;
  /** Sort key attribute of the marker table, if it has one. @default the sink's sortKey in the same table, else none */
  readonly sortKey?: string;
  /**
   * Value markers put in the sort key (a string for type S, a number for type N).
   * @default after the key's type (looked up once with DescribeTable): '#sluice-commit', 0, or those bytes
   */
  readonly sortKeyValue?: string | number;
  /** Prefix of marker partition key values; no item of the table may use it. @default '#sluice-commit#' */
  readonly keyPrefix?: string;
  /**
   * Attribute holding each marker's expiry (epoch seconds). Enable DynamoDB TTL on it to have markers deleted.
   * @default 'sluiceMarkerExpiresAt'
   */
  readonly ttlAttribute?: string;
  /**
   * Marker lifetime. A committable restored from a checkpoint older than this could apply twice: keep it longer
   * than the oldest checkpoint or savepoint you may restore. 0: no expiry attribute. @default 30 days
   */
  readonly ttlSeconds?: number;
}

export interface DynamoDbSinkOptions<T> extends DynamoDbKeySchema {
  readonly table: string;
  /** Maps a record to its writes (null/undefined/[]: none). Called once per record; must not do I/O. */
  readonly toWrites: (value: T) => DynamoDbWrite | readonly DynamoDbWrite[] | null | undefined;
  /**
   * 'transactional': exactly once, every write kind, via TransactWriteItems with commit markers. 'upsert':
   * BatchWriteItem/UpdateItem without markers, idempotent writes only (put, delete, update with set/remove).
   * @default 'transactional'
   */
  readonly mode?: DynamoDbSinkMode;
  /**
   * Names the job ([A-Za-z0-9._:-], at most 100) and turns on zombie fencing: a fence item per jobId in the marker
   * table, raised by each attempt and checked by every commit transaction. It must be unique per job (two jobs with
   * one jobId fence each other) and stay the same across the job's runs. Unset: no fence (as without fencing
   * tokens), and markers are named after the table; commit markers of different jobs never collide either way.
   * @default none (unfenced)
   */
  readonly jobId?: string;
  readonly marker?: DynamoDbMarkerOptions;
  /**
   * Items per TransactWriteItems call, the commit marker and (with a jobId) the fence check included (2-100).
   * @default 100
   */
  readonly maxItemsPerTransaction?: number;
  /** Estimated bytes per transaction (DynamoDB allows 4 MB). @default 4000000 */
  readonly maxTransactionBytes?: number;
  /** Chunks of one checkpoint committed at once. @default 4 */
  readonly commitConcurrency?: number;
  /** Without checkpoints: writes staged before the writer commits them itself. @default 1000 */
  readonly flushEveryWrites?: number;
  /** Backoff of throttled, conflicting and failed calls. @default 10 attempts, 100 ms base, 5 s ceiling, full jitter */
  readonly retry?: RetryOptions;
  /** Client settings; unset ones come from the SDK's default chains and AWS_ENDPOINT_URL[_DYNAMODB]. */
  readonly aws?: AwsClientOverrides;
  /** A client to use instead of one per writer and committer (not destroyed by the sink). */
  readonly client?: DynamoDBClient;
  /** Sink name in the plan. @default `dynamodb:<table>` */
  readonly name?: string;
}

export interface CompiledDynamoDbSink<T> {
  readonly table: string;
  readonly schema: DynamoDbKeySchema;
  readonly toWrites: DynamoDbSinkOptions<T>['toWrites'];
  readonly mode: DynamoDbSinkMode;
  /** First part of commit marker names: the options' jobId, else the table name. */
  readonly jobId: string;
  /** Whether commits are fenced: only when the options name the job (`jobId`). */
  readonly fenced: boolean;
  readonly marker: MarkerConfig;
  readonly limits: ChunkLimits;
  readonly commitConcurrency: number;
  readonly flushEveryWrites: number;
  readonly retry: RetryPolicy;
  readonly aws: AwsClientOverrides | undefined;
  readonly client: DynamoDBClient | undefined;
  readonly name: string;
}

const TABLE = /^[A-Za-z0-9_.-]{3,255}$/;
const JOB_ID = /^[A-Za-z0-9._:-]{1,100}$/;
const DEFAULT_TTL_SECONDS = 30 * 24 * 3600;

function fail(message: string): never {
  throw new ConfigError(`DynamoDB sink: ${message}`);
}

function integer(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min || value > max) fail(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  return value;
}

function attributeName(what: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > 255) fail(`${what} must be a non-empty attribute name`);
  return value;
}

function sortKeyValue(value: string | number | undefined): AttributeValue | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value !== '') return { S: value };
  if (typeof value === 'number' && Number.isFinite(value)) return { N: String(value) };
  return fail(`marker.sortKeyValue must be a non-empty string or a finite number, got ${String(value)}`);
}

export function compileDynamoDbSinkOptions<T>(options: DynamoDbSinkOptions<T>): CompiledDynamoDbSink<T> {
  if (typeof options.table !== 'string' || !TABLE.test(options.table)) fail(`"${String(options.table)}" is not a valid table name`);
  const partitionKey = attributeName('partitionKey', options.partitionKey) ?? fail('partitionKey is required');
  const sortKey = attributeName('sortKey', options.sortKey);
  if (typeof options.toWrites !== 'function') fail('toWrites (record -> writes) is required');
  const mode = options.mode ?? 'transactional';
  if (mode !== 'transactional' && mode !== 'upsert') fail(`mode must be 'transactional' or 'upsert', got "${String(mode)}"`);
  if (options.jobId !== undefined && (typeof options.jobId !== 'string' || !JOB_ID.test(options.jobId))) {
    fail(`jobId "${String(options.jobId)}" must match [A-Za-z0-9._:-]{1,100}`);
  }
  // A defaulted name cannot tell two jobs on one table apart, so it must not fence: only an explicit jobId does.
  const fenced = options.jobId !== undefined;
  const jobId = options.jobId ?? options.table;

  const m = options.marker ?? {};
  const markerTable = m.table ?? options.table;
  if (!TABLE.test(markerTable)) fail(`marker.table "${markerTable}" is not a valid table name`);
  const sameTable = markerTable === options.table;
  const markerPk = attributeName('marker.partitionKey', m.partitionKey) ?? (sameTable ? partitionKey : 'pk');
  const markerSk = attributeName('marker.sortKey', m.sortKey) ?? (sameTable ? sortKey : undefined);
  const keyPrefix = m.keyPrefix ?? '#sluice-commit#';
  if (keyPrefix === '') fail('marker.keyPrefix must not be empty');
  const ttlSeconds = integer('marker.ttlSeconds', m.ttlSeconds, DEFAULT_TTL_SECONDS, 0, 10 * 365 * 24 * 3600);
  const ttlAttribute = attributeName('marker.ttlAttribute', m.ttlAttribute) ?? 'sluiceMarkerExpiresAt';
  const marker: MarkerConfig = {
    table: markerTable,
    partitionKey: markerPk,
    sortKey: markerSk === undefined ? undefined : { name: markerSk, value: sortKeyValue(m.sortKeyValue) },
    keyPrefix,
    ttl: ttlSeconds === 0 ? undefined : { attribute: ttlAttribute, seconds: ttlSeconds },
  };

  const maxItems = integer('maxItemsPerTransaction', options.maxItemsPerTransaction, 100, 2, 100);
  const maxBytes = integer('maxTransactionBytes', options.maxTransactionBytes, 4_000_000, 1024, 4 * 1024 * 1024);
  return {
    table: options.table,
    schema: { partitionKey, sortKey },
    toWrites: options.toWrites,
    mode,
    jobId,
    fenced,
    marker,
    // The marker rides in every transaction, and so does the fence check when fenced (at 2, the check comes on
    // top); upsert mode has neither but keeps the same chunks.
    limits: { maxItems: fenced ? Math.max(1, maxItems - 2) : maxItems - 1, maxBytes: maxBytes - 1024 },
    commitConcurrency: integer('commitConcurrency', options.commitConcurrency, 4, 1, 64),
    flushEveryWrites: integer('flushEveryWrites', options.flushEveryWrites, 1000, 1, 10_000_000),
    retry: compileRetry('DynamoDB sink', options.retry),
    aws: options.aws,
    client: options.client,
    name: options.name ?? `dynamodb:${options.table}`,
  };
}
