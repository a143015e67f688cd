import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Committer } from '../../sink.ts';
import type { DynamoDbCommittable, ResolvedMarkerConfig } from './committable.ts';
import type { CompiledDynamoDbSink } from './dynamodb-sink-options.ts';
import { resolveMarkerConfig } from './marker-schema.ts';
import { commitTransactional, newCommitStats, type DynamoDbCommitStats } from './transactional-commit.ts';
import { commitUpsert } from './upsert-commit.ts';

/** What committing needs of the sink's options. */
export type DynamoDbCommitterConfig = Pick<CompiledDynamoDbSink<unknown>, 'mode' | 'marker' | 'retry' | 'commitConcurrency'>;

/**
 * Commits DynamoDB sink committables in order, each chunk exactly once ('transactional') or idempotently
 * ('upsert'). Committing the same committables again changes nothing. Errors are DynamoDbSinkErrors: retriable
 * when retries ran out (the job restarts and commits again), not retriable when DynamoDB rejects the writes.
 */
export class DynamoDbCommitter implements Committer<DynamoDbCommittable> {
  readonly stats: DynamoDbCommitStats = newCommitStats();
  private marker: Promise<ResolvedMarkerConfig> | undefined;

  constructor(
    private readonly config: DynamoDbCommitterConfig,
    private readonly client: DynamoDBClient,
  ) {}

  async commit(committables: readonly DynamoDbCommittable[]): Promise<void> {
    for (const committable of committables) {
      if (this.config.mode === 'transactional') {
        this.marker ??= resolveMarkerConfig(this.client, this.config.marker);
        const marker = await this.marker.catch((error: unknown) => {
          this.marker = undefined;
          throw error;
        });
        await commitTransactional(this.client, committable, { ...this.config, marker }, this.stats);
      } else await commitUpsert(this.client, committable, this.config, this.stats);
    }
  }
}
