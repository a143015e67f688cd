import {
  ConditionalCheckFailedException,
  GetItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { FencedError, type FencingToken } from '../../../core/index.ts';
import type { ResolvedMarkerConfig } from './committable.ts';
import { classifyFailure, describeFailure, DynamoDbSinkError } from './errors.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import { backoffDelay, sleep, type RetryPolicy } from '../kinesis/backoff.ts';

const EPOCH = 'sluiceFenceEpoch';
const ATTEMPT = 'sluiceFenceAttempt';

/**
 * The sink's fence, kept only for a sink given an explicit `jobId` (a defaulted one, the table name, would make
 * unrelated jobs on one table fence each other): one item in the marker table per job (`<keyPrefix><jobId>/fence`)
 * holding the highest epoch that has started committing. A committer raises it to its own epoch before its first
 * commit (the runtime commits the restored committables when an attempt starts, so that is when the attempt
 * starts), and every commit transaction carries a ConditionCheck that the fence is not above the committer's epoch:
 * once a newer attempt has raised it, a zombie of an older one cannot apply a single chunk, however late its
 * request arrives.
 */
export interface SinkFence {
  /** Raises the fence to `token.epoch` (never lowers it); FencedError when it already stands higher. */
  raise(client: DynamoDBClient, retry: RetryPolicy): Promise<void>;
  /** The ConditionCheck every commit transaction of this committer carries. */
  readonly check: TransactWriteItem;
  readonly token: FencingToken;
  /** What refuses: names the table and job in FencedError. */
  readonly component: string;
}

function fenceKey(marker: ResolvedMarkerConfig, jobId: string): Record<string, AttributeValue> {
  const key: Record<string, AttributeValue> = { [marker.partitionKey]: { S: `${marker.keyPrefix}${jobId}/fence` } };
  if (marker.sortKey !== undefined) key[marker.sortKey.name] = marker.sortKey.value;
  return key;
}

export function sinkFence(marker: ResolvedMarkerConfig, jobId: string, token: FencingToken): SinkFence {
  const key = fenceKey(marker, jobId);
  const component = `DynamoDB sink of job "${jobId}" (fence in table ${marker.table})`;
  const names = { '#epoch': EPOCH };
  const values = { ':epoch': { N: String(token.epoch) } };
  return {
    token,
    component,
    check: {
      ConditionCheck: {
        TableName: marker.table,
        Key: key,
        ConditionExpression: '#epoch <= :epoch',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
    async raise(client, retry) {
      for (let attempt = 1; ; attempt++) {
        try {
          await client.send(
            new UpdateItemCommand({
              TableName: marker.table,
              Key: key,
              UpdateExpression: 'SET #epoch = :epoch, #attempt = :attempt',
              ConditionExpression: 'attribute_not_exists(#epoch) OR #epoch <= :epoch',
              ExpressionAttributeNames: { ...names, '#attempt': ATTEMPT },
              ExpressionAttributeValues: { ...values, ':attempt': { N: String(token.attempt) } },
            }),
          );
          return;
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException || awsErrorName(error) === 'ConditionalCheckFailedException') {
            throw new FencedError(component, await currentFence(client, marker.table, key), token);
          }
          if (classifyFailure(error) === 'retry' && attempt < retry.maxAttempts) {
            await sleep(backoffDelay(retry, attempt));
            continue;
          }
          throw new DynamoDbSinkError(`raising the commit fence of job "${jobId}" in ${marker.table} failed: ${describeFailure(error)}`, {
            cause: error,
            retriable: classifyFailure(error) === 'retry',
            errorCode: awsErrorName(error),
          });
        }
      }
    },
  };
}

/** The token the fence holds now (for the refusal's message); epoch unknown reads as the highest possible. */
export async function currentFence(client: DynamoDBClient, table: string, key: Record<string, AttributeValue>): Promise<FencingToken> {
  try {
    const item = (await client.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
    return { epoch: Number(item?.[EPOCH]?.N ?? Number.MAX_SAFE_INTEGER), attempt: Number(item?.[ATTEMPT]?.N ?? 0) };
  } catch {
    return { epoch: Number.MAX_SAFE_INTEGER, attempt: 0 };
  }
}

/** Reads the fence of `jobId` (tests and tools): undefined before any attempt raised it. */
export async function readSinkFence(client: DynamoDBClient, marker: ResolvedMarkerConfig, jobId: string): Promise<FencingToken | undefined> {
  const item = (await client.send(new GetItemCommand({ TableName: marker.table, Key: fenceKey(marker, jobId), ConsistentRead: true }))).Item;
  if (item?.[EPOCH]?.N === undefined) return undefined;
  return { epoch: Number(item[EPOCH].N), attempt: Number(item[ATTEMPT]?.N ?? 0) };
}
