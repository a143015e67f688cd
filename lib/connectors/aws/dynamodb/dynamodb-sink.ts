import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SinkContext, TwoPhaseCommitSink } from '../../sink.ts';
import { awsClientConfig } from '../client-config.ts';
import type { DynamoDbCommittable } from './committable.ts';
import { DynamoDbCommitter } from './dynamodb-committer.ts';
import { compileDynamoDbSinkOptions, type DynamoDbSinkOptions } from './dynamodb-sink-options.ts';
import { DynamoDbSinkWriter } from './dynamodb-writer.ts';
import { dynamoDbExternalCommit } from './external-commit.ts';

export type DynamoDbSink<T> = TwoPhaseCommitSink<T, DynamoDbCommittable>;

/**
 * Writes records to a DynamoDB table, exactly once with checkpoints (see docs/connectors/dynamodb.md):
 * `toWrites` maps each record to puts, updates and deletes by key; the writer stages them per checkpoint (folding
 * writes to the same item), and once the checkpoint is complete the committer applies them with TransactWriteItems
 * of at most 100 items, each carrying a commit marker put on the condition that it does not exist, so a commit
 * repeated after a recovery, even days later, changes nothing. Mode 'upsert' skips transactions and markers for
 * idempotent writes. Options are checked here (ConfigError).
 */
export function dynamoDbSink<T>(options: DynamoDbSinkOptions<T>): DynamoDbSink<T> {
  const config = compileDynamoDbSinkOptions(options);
  // One client per sink (and thread), created on first use; idle keep-alive sockets do not hold the process open.
  let created: DynamoDBClient | undefined;
  const client = (): DynamoDBClient => config.client ?? (created ??= new DynamoDBClient(awsClientConfig('dynamodb', config.aws)));
  return {
    name: config.name,
    twoPhaseCommit: true,
    // In a cluster the coordinator commits, from this JSON alone.
    externalCommit: dynamoDbExternalCommit(config),
    createWriter(ctx: SinkContext): DynamoDbSinkWriter<T> {
      return new DynamoDbSinkWriter(config, ctx, client);
    },
    createCommitter(ctx: SinkContext): DynamoDbCommitter {
      return new DynamoDbCommitter(config, client(), ctx.fencing);
    },
    // Staged writes live only in memory and in checkpoints: an earlier run leaves nothing in DynamoDB to clean up.
    cleanUpDangling(): void {},
  };
}
