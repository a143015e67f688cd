import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FencingToken } from '../../../core/index.ts';
import type { Committer } from '../../sink.ts';
import type { DynamoDbCommittable, ResolvedMarkerConfig } from './committable.ts';
import type { CompiledDynamoDbSink } from './dynamodb-sink-options.ts';
import { resolveMarkerConfig } from './marker-schema.ts';
import { sinkFence, type SinkFence } from './sink-fence.ts';
import { commitTransactional, newCommitStats, type DynamoDbCommitStats } from './transactional-commit.ts';
import { commitUpsert } from './upsert-commit.ts';

/** What committing needs of the sink's options. */
export type DynamoDbCommitterConfig = Pick<CompiledDynamoDbSink<unknown>, 'mode' | 'marker' | 'retry' | 'commitConcurrency'> &
  Partial<Pick<CompiledDynamoDbSink<unknown>, 'jobId' | 'fenced'>> & {
    /** Upsert mode: condition each write on this item attribute's checkpoint id (UpsertCommitConfig). @default undefined */
    readonly upsertCheckpointAttribute?: string;
  };

interface Prepared {
  readonly marker: ResolvedMarkerConfig;
  readonly fence: SinkFence | undefined;
}

/**
 * Commits DynamoDB sink committables in order, each chunk exactly once ('transactional') or idempotently
 * ('upsert'). Committing the same committables again changes nothing. Errors are DynamoDbSinkErrors: retriable
 * when retries ran out (the job restarts and commits again), not retriable when DynamoDB rejects the writes.
 *
 * With a fencing token and an explicit `jobId` (`fenced`), transactional commits are fenced: the first `commit`
 * call raises the job's fence to the token's epoch, even with nothing to commit (the runtime makes that call when
 * an attempt starts), and every transaction checks it; a committer of an older epoch than the fence gets
 * FencedError and changes nothing. Without a jobId there is no fence (unrelated jobs may share a table). Upsert
 * mode is not fenced: its writes are idempotent puts without markers.
 */
export class DynamoDbCommitter implements Committer<DynamoDbCommittable> {
  readonly stats: DynamoDbCommitStats = newCommitStats();
  private prepared: Promise<Prepared> | undefined;

  constructor(
    private readonly config: DynamoDbCommitterConfig,
    private readonly client: DynamoDBClient,
    private readonly fencing?: FencingToken,
  ) {}

  async commit(committables: readonly DynamoDbCommittable[]): Promise<void> {
    if (this.config.mode !== 'transactional') {
      const upsert = { ...this.config, checkpointAttribute: this.config.upsertCheckpointAttribute };
      for (const committable of committables) await commitUpsert(this.client, committable, upsert, this.stats);
      return;
    }
    this.prepared ??= this.prepare();
    const { marker, fence } = await this.prepared.catch((error: unknown) => {
      this.prepared = undefined;
      throw error;
    });
    for (const committable of committables) {
      await commitTransactional(this.client, committable, { ...this.config, marker, fence }, this.stats);
    }
  }

  private async prepare(): Promise<Prepared> {
    const marker = await resolveMarkerConfig(this.client, this.config.marker);
    const { jobId, fenced } = this.config;
    if (this.fencing === undefined || jobId === undefined || fenced !== true) return { marker, fence: undefined };
    const fence = sinkFence(marker, jobId, this.fencing);
    await fence.raise(this.client, this.config.retry);
    return { marker, fence };
  }
}
