import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../../../core/index.ts';
import type { RetryPolicy } from '../kinesis/backoff.ts';
import type { MarkerConfig } from './committable.ts';
import { DynamoDbCommitter } from './dynamodb-committer.ts';
import type { CompiledDynamoDbSink, DynamoDbSinkMode } from './dynamodb-sink-options.ts';

/**
 * `externalCommit` of a DynamoDB sink: everything its committer needs, as JSON, so the cluster's coordinator commits
 * the sink's committables without loading the job's code (`toWrites` is not needed: committables carry the writes).
 */
export interface DynamoDbExternalCommit {
  readonly [setting: string]: unknown;
  readonly kind: 'dynamodb';
  readonly table: string;
  readonly mode: DynamoDbSinkMode;
  readonly jobId: string;
  readonly fenced: boolean;
  readonly marker: MarkerConfig;
  readonly retry: RetryPolicy;
  readonly commitConcurrency: number;
}

export function dynamoDbExternalCommit<T>(config: CompiledDynamoDbSink<T>): DynamoDbExternalCommit {
  const { table, mode, jobId, fenced, marker, retry, commitConcurrency } = config;
  // JSON round trip: the descriptor travels through DynamoDB and must hold nothing JSON cannot.
  return JSON.parse(JSON.stringify({ kind: 'dynamodb', table, mode, jobId, fenced, marker, retry, commitConcurrency })) as DynamoDbExternalCommit;
}

function check(descriptor: { readonly [setting: string]: unknown }): DynamoDbExternalCommit {
  const d = descriptor as Partial<DynamoDbExternalCommit>;
  const missing = (['table', 'mode', 'jobId', 'marker', 'retry', 'commitConcurrency'] as const).filter((k) => d[k] === undefined);
  if (d.kind !== 'dynamodb' || missing.length > 0) {
    throw new ConfigError(`externalCommit of kind dynamodb lacks ${missing.join(', ') || 'its kind'}: rebuild it with dynamoDbExternalCommit (run \`sluice aws init\` again)`);
  }
  return d as DynamoDbExternalCommit;
}

/** The item attribute in which cluster upsert commits record the checkpoint that last wrote an item. */
export const UPSERT_CHECKPOINT_ATTRIBUTE = 'sluiceCheckpoint';

/**
 * The DynamoDB committer rebuilt from its descriptor. Unfenced by a sink fence: in a cluster only the coordinator
 * commits, and its markers make a repeated commit (a retried handler, a superseded execution) change nothing.
 * Upsert writes carry no markers, so each is conditioned on the item's `sluiceCheckpoint` attribute instead: a late
 * commit of an older checkpoint cannot overwrite a newer one's values.
 */
export function dynamoDbCommitterFromDescriptor(descriptor: { readonly [setting: string]: unknown }, client: DynamoDBClient): DynamoDbCommitter {
  const d = check(descriptor);
  return new DynamoDbCommitter(
    {
      mode: d.mode,
      marker: d.marker,
      retry: d.retry,
      commitConcurrency: d.commitConcurrency,
      jobId: d.jobId,
      fenced: d.fenced,
      upsertCheckpointAttribute: UPSERT_CHECKPOINT_ATTRIBUTE,
    },
    client,
  );
}


