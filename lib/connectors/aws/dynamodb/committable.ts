import { createHash } from 'node:crypto';
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { DynamoDbChunk } from './transact-items.ts';

/**
 * The writes of one sink subtask for one checkpoint, as stored in the checkpoint until committed. Plain data: it
 * carries everything a commit needs, so a restored committable commits the same chunks under the same markers
 * whichever subtask (after rescaling) and whichever later run commits it.
 */
export interface DynamoDbCommittable {
  /**
   * `<jobId>/<fencingTag of the attempt>-<writer's random nonce>/<subtask>/<c<checkpoint id> | f<flush number>>`:
   * names the transaction's commit markers. Restored committables keep it, so a re-commit finds the same markers.
   */
  readonly txn: string;
  /** Epoch ms of the pre-commit; the markers' expiry counts from it (so a retried request is identical). */
  readonly preparedAt: number;
  readonly chunks: readonly DynamoDbChunk[];
}

/** Where commit markers go and how they look (compiled from `DynamoDbSinkOptions.marker`). */
export interface MarkerConfig {
  readonly table: string;
  readonly partitionKey: string;
  /**
   * The marker table's sort key and the constant value markers put in it; `value` undefined: a string, number or
   * binary constant after the key's type, which `resolveMarkerConfig` looks up.
   */
  readonly sortKey: { readonly name: string; readonly value: AttributeValue | undefined } | undefined;
  /** Prefix of marker partition key values, so they cannot collide with the table's own items. */
  readonly keyPrefix: string;
  /** Attribute for DynamoDB TTL (epoch seconds) and the markers' lifetime; undefined: markers never expire. */
  readonly ttl: { readonly attribute: string; readonly seconds: number } | undefined;
}

/** A marker config whose sort key value is known. */
export interface ResolvedMarkerConfig extends Omit<MarkerConfig, 'sortKey'> {
  readonly sortKey: { readonly name: string; readonly value: AttributeValue } | undefined;
}

export function markerKey(config: ResolvedMarkerConfig, txn: string, chunk: number): Record<string, AttributeValue> {
  const key: Record<string, AttributeValue> = { [config.partitionKey]: { S: `${config.keyPrefix}${txn}#${chunk}` } };
  if (config.sortKey !== undefined) key[config.sortKey.name] = config.sortKey.value;
  return key;
}

/**
 * The commit marker of chunk `chunk`: a Put that fails when the marker exists, so the transaction that carries it
 * applies at most once, however late it is retried. Deterministic, so a retry sends the identical request.
 */
export function markerPut(config: ResolvedMarkerConfig, committable: DynamoDbCommittable, chunk: number): TransactWriteItem {
  const item: Record<string, AttributeValue> = {
    ...markerKey(config, committable.txn, chunk),
    sluiceTxn: { S: committable.txn },
    sluiceChunk: { N: String(chunk) },
    sluicePreparedAt: { N: String(committable.preparedAt) },
  };
  if (config.ttl !== undefined) {
    item[config.ttl.attribute] = { N: String(Math.floor(committable.preparedAt / 1000) + config.ttl.seconds) };
  }
  return {
    Put: {
      TableName: config.table,
      Item: item,
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': config.partitionKey },
    },
  };
}

/** ClientRequestToken of a chunk (at most 36 characters): repeats of one chunk within 10 minutes are deduplicated. */
export function requestToken(txn: string, chunk: number): string {
  return createHash('sha256').update(`${txn}#${chunk}`).digest('hex').slice(0, 36);
}
