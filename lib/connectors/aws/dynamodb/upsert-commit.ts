import { BatchWriteItemCommand, DeleteItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { checkpointIdOfTxn, conditionedWrite, type ConditionedWrite } from './checkpoint-conditioned-writes.ts';
import { backoffDelay, sleep, type RetryPolicy } from '../kinesis/backoff.ts';
import type { DynamoDbCommittable } from './committable.ts';
import { classifyFailure, describeFailure, DynamoDbSinkError } from './errors.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import { commitByGeneration, type DynamoDbCommitStats } from './transactional-commit.ts';
import { forEachLimited } from '../for-each-limited.ts';

/** BatchWriteItem takes at most 25 requests. */
const BATCH_SIZE = 25;
/** UpdateItem calls of one chunk in flight. */
const UPDATE_CONCURRENCY = 8;

export interface UpsertCommitConfig {
  readonly retry: RetryPolicy;
  readonly commitConcurrency: number;
  /**
   * Item attribute holding the checkpoint id that last wrote the item: each write is then one conditioned request
   * (checkpoint-conditioned-writes.ts) and a late commit of an older checkpoint is skipped (`stats.superseded`).
   * The cluster coordinator's committers set it. @default undefined (unconditioned batched writes)
   */
  readonly checkpointAttribute?: string | undefined;
}

/** Calls `fn` until it succeeds, retrying what `classifyFailure` calls transient. */
async function withRetries(what: string, retry: RetryPolicy, stats: DynamoDbCommitStats, fn: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await fn();
      return;
    } catch (error) {
      if (error instanceof DynamoDbSinkError) throw error;
      const kind = classifyFailure(error);
      if (kind === 'retry' && attempt < retry.maxAttempts) {
        stats.retries++;
        await sleep(backoffDelay(retry, attempt));
        continue;
      }
      throw new DynamoDbSinkError(`${what} failed${kind === 'retry' ? ` after ${attempt} attempts` : ''}: ${describeFailure(error)}`, {
        cause: error,
        retriable: kind === 'retry',
        errorCode: awsErrorName(error),
      });
    }
  }
}

/**
 * Commits a committable without transactions: puts and deletes with BatchWriteItem (unprocessed items retried with
 * backoff), updates (SET/REMOVE only) with UpdateItem. Every write is idempotent, so committing again after a
 * recovery rewrites the same values; readers may see a chunk half applied, and an item may briefly go back to a
 * value the checkpoint wrote before a later one is committed again. Under the cluster coordinator nothing commits
 * the later checkpoint again after a late (timed-out or duplicate) commit of an earlier one, so there
 * `checkpointAttribute` conditions each write on the item's checkpoint instead (docs/cluster.md, "Upsert-mode
 * DynamoDB sinks").
 */
export async function commitUpsert(
  client: DynamoDBClient,
  committable: DynamoDbCommittable,
  config: UpsertCommitConfig,
  stats: DynamoDbCommitStats,
): Promise<void> {
  const checkpointId = checkpointIdOfTxn(committable.txn);
  if (config.checkpointAttribute !== undefined && checkpointId !== undefined) {
    await commitConditioned(client, committable, config, config.checkpointAttribute, checkpointId, stats);
    return;
  }
  await commitByGeneration(committable.chunks, config.commitConcurrency, async (chunk, index) => {
    const requests: { table: string; request: WriteRequest }[] = [];
    const updates = [];
    for (const item of chunk.items) {
      if (item.Put !== undefined) requests.push({ table: item.Put.TableName as string, request: { PutRequest: { Item: item.Put.Item } } });
      else if (item.Delete !== undefined) requests.push({ table: item.Delete.TableName as string, request: { DeleteRequest: { Key: item.Delete.Key } } });
      else if (item.Update !== undefined) updates.push(item.Update);
    }
    for (let i = 0; i < requests.length; i += BATCH_SIZE) {
      let pending: Record<string, WriteRequest[]> = {};
      for (const { table, request } of requests.slice(i, i + BATCH_SIZE)) (pending[table] ??= []).push(request);
      let unprocessedRounds = 0;
      await withRetries(`BatchWriteItem of chunk ${index} of ${committable.txn}`, config.retry, stats, async () => {
        while (Object.keys(pending).length > 0) {
          const out = await client.send(new BatchWriteItemCommand({ RequestItems: pending }));
          pending = Object.fromEntries(Object.entries(out.UnprocessedItems ?? {}).filter(([, r]) => r.length > 0));
          if (Object.keys(pending).length === 0) return;
          unprocessedRounds++;
          if (unprocessedRounds >= config.retry.maxAttempts) {
            throw new DynamoDbSinkError(
              `BatchWriteItem of chunk ${index} of ${committable.txn} left items unprocessed ${unprocessedRounds} times (throttled)`,
              { retriable: true, errorCode: 'UnprocessedItems' },
            );
          }
          stats.retries++;
          await sleep(backoffDelay(config.retry, unprocessedRounds));
        }
      });
    }
    await forEachLimited(updates, UPDATE_CONCURRENCY, (update) =>
      withRetries(`UpdateItem of chunk ${index} of ${committable.txn}`, config.retry, stats, async () => {
        await client.send(new UpdateItemCommand(update));
      }),
    );
    stats.committed++;
  });
}

/** Writes of one chunk in flight when each is its own conditioned request. */
const CONDITIONED_CONCURRENCY = 16;

async function commitConditioned(
  client: DynamoDBClient,
  committable: DynamoDbCommittable,
  config: UpsertCommitConfig,
  attribute: string,
  checkpointId: number,
  stats: DynamoDbCommitStats,
): Promise<void> {
  await commitByGeneration(committable.chunks, config.commitConcurrency, async (chunk, index) => {
    const writes = chunk.items.flatMap((item) => conditionedWrite(item, attribute, checkpointId) ?? []);
    await forEachLimited(writes, CONDITIONED_CONCURRENCY, (write) =>
      withRetries(`conditioned ${write.kind} of chunk ${index} of ${committable.txn}`, config.retry, stats, async () => {
        try {
          await send(client, write);
        } catch (error) {
          // The item holds a newer checkpoint's value: this late write is superseded, not an error.
          if (awsErrorName(error) !== 'ConditionalCheckFailedException') throw error;
          stats.superseded = (stats.superseded ?? 0) + 1;
        }
      }),
    );
    stats.committed++;
  });
}

async function send(client: DynamoDBClient, write: ConditionedWrite): Promise<void> {
  switch (write.kind) {
    case 'put':
      await client.send(new PutItemCommand(write.input));
      return;
    case 'delete':
      await client.send(new DeleteItemCommand(write.input));
      return;
    case 'update':
      await client.send(new UpdateItemCommand(write.input));
      return;
  }
}
