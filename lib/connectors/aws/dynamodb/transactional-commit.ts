import { TransactWriteItemsCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { backoffDelay, sleep, type RetryPolicy } from '../kinesis/backoff.ts';
import { markerPut, requestToken, type DynamoDbCommittable, type ResolvedMarkerConfig } from './committable.ts';
import { cancellationReasons, classifyFailure, describeFailure, DynamoDbSinkError } from './errors.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import type { DynamoDbChunk } from './transact-items.ts';
import { forEachLimited } from '../for-each-limited.ts';
import { FencedError } from '../../../core/index.ts';
import { currentFence, type SinkFence } from './sink-fence.ts';

/** DynamoDB's limit of items in one TransactWriteItems call. */
const MAX_TRANSACTION_ITEMS = 100;

/** Counts of what commits did; for metrics and tests. */
export interface DynamoDbCommitStats {
  /** Chunks applied by this committer. */
  committed: number;
  /** Chunks found committed already (their marker existed): re-commits after a recovery. */
  alreadyCommitted: number;
  /** Calls repeated after throttling, conflicts or transient errors. */
  retries: number;
  /** Checkpoint-conditioned upsert writes skipped because the item already holds a newer checkpoint's value. */
  superseded?: number;
}

export function newCommitStats(): DynamoDbCommitStats {
  return { committed: 0, alreadyCommitted: 0, retries: 0 };
}

/** Runs the chunks generation by generation; chunks of one generation touch distinct items, so they may overlap. */
export async function commitByGeneration(
  chunks: readonly DynamoDbChunk[],
  concurrency: number,
  commitChunk: (chunk: DynamoDbChunk, index: number) => Promise<void>,
): Promise<void> {
  let start = 0;
  while (start < chunks.length) {
    const generation = (chunks[start] as DynamoDbChunk).generation;
    let end = start;
    while (end < chunks.length && (chunks[end] as DynamoDbChunk).generation === generation) end++;
    const indices = Array.from({ length: end - start }, (_, i) => start + i);
    await forEachLimited(indices, concurrency, (index) => commitChunk(chunks[index] as DynamoDbChunk, index));
    start = end;
  }
}

export interface TransactionalCommitConfig {
  readonly marker: ResolvedMarkerConfig;
  readonly retry: RetryPolicy;
  readonly commitConcurrency: number;
  /** The committer's fence (raised already): every transaction checks it. Undefined: commits are not fenced. */
  readonly fence?: SinkFence | undefined;
}

/**
 * Commits every chunk of a committable as one TransactWriteItems call with its commit marker. A chunk whose marker
 * exists was committed before (maybe hours ago, by an earlier run): the transaction is cancelled with the marker's
 * ConditionalCheckFailed and nothing changes, which counts as success. The ClientRequestToken additionally makes
 * DynamoDB answer a repeat within 10 minutes with the first result. With a fence, each transaction also checks
 * that no newer attempt has raised it (FencedError, nothing applied); a chunk prepared unfenced (before fences
 * existed, or before the sink was given a jobId) with 99 writes has no room for the check and commits unfenced, as
 * it would have then.
 */
export async function commitTransactional(
  client: DynamoDBClient,
  committable: DynamoDbCommittable,
  config: TransactionalCommitConfig,
  stats: DynamoDbCommitStats,
): Promise<void> {
  await commitByGeneration(committable.chunks, config.commitConcurrency, async (chunk, index) => {
    const items = [...chunk.items, markerPut(config.marker, committable, index)];
    const markerIndex = items.length - 1;
    const fence = config.fence !== undefined && items.length < MAX_TRANSACTION_ITEMS ? config.fence : undefined;
    if (fence !== undefined) items.push(fence.check);
    let token: string | undefined = requestToken(committable.txn, index);
    for (let attempt = 1; ; attempt++) {
      try {
        await client.send(new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: token }));
        stats.committed++;
        return;
      } catch (error) {
        if (fence !== undefined && cancellationReasons(error)[markerIndex + 1] === 'ConditionalCheckFailed') {
          const check = fence.check.ConditionCheck!;
          throw new FencedError(fence.component, await currentFence(client, check.TableName!, check.Key!), fence.token);
        }
        const kind = classifyFailure(error, markerIndex);
        if (kind === 'already-committed') {
          stats.alreadyCommitted++;
          return;
        }
        if (kind === 'token-mismatch' && token !== undefined) {
          // Another request used this token in the last 10 minutes; the marker alone decides from here.
          token = undefined;
          continue;
        }
        if (kind === 'retry' && attempt < config.retry.maxAttempts) {
          stats.retries++;
          await sleep(backoffDelay(config.retry, attempt));
          continue;
        }
        const reasons = cancellationReasons(error);
        throw new DynamoDbSinkError(
          `committing chunk ${index} (${chunk.items.length} writes) of ${committable.txn} failed` +
            `${kind === 'retry' ? ` after ${attempt} attempts` : ''}: ${describeFailure(error)}`,
          { cause: error, retriable: kind === 'retry', errorCode: reasons.find((r) => r !== 'None') ?? awsErrorName(error) },
        );
      }
    }
  });
}
