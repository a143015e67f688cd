import { randomBytes, randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fencingTag, originAt, UserFunctionError, type RecordBatch } from '../../../core/index.ts';
import type { SinkContext, TwoPhaseCommitSinkWriter } from '../../sink.ts';
import type { DynamoDbCommittable } from './committable.ts';
import { DynamoDbCommitter } from './dynamodb-committer.ts';
import type { CompiledDynamoDbSink } from './dynamodb-sink-options.ts';
import { StagedWrites } from './staged-writes.ts';
import { toChunks } from './transact-items.ts';
import type { DynamoDbWrite } from './write-ops.ts';


/**
 * Stages a sink subtask's writes in memory, folded per item, until the checkpoint barrier; `prepareCommit` turns
 * them into a committable (chunks of transaction items) that the checkpoint stores and the committer applies once
 * the checkpoint is complete. Nothing reaches DynamoDB before that. Without checkpoints the writer commits by
 * itself every `flushEveryWrites` staged writes and in `finish`.
 */
export class DynamoDbSinkWriter<T> implements TwoPhaseCommitSinkWriter<T, DynamoDbCommittable> {
  private readonly staged: StagedWrites;
  private readonly txnPrefix: string;
  private readonly checkpointing: boolean;
  private flushes = 0;
  private committer: DynamoDbCommitter | undefined;

  constructor(
    private readonly config: CompiledDynamoDbSink<T>,
    private readonly ctx: SinkContext,
    private readonly client: () => DynamoDBClient,
  ) {
    this.staged = new StagedWrites(config.schema, config.mode === 'transactional', ctx.operatorName);
    // Marker names must never repeat across jobs or runs, or a chunk reads as committed that never was. The
    // attempt's tag alone does not ensure that: jobs share the default jobId (the table) and two jobs started in
    // the same millisecond on different hosts get the same token. So each writer adds a random nonce (48 bits);
    // restored committables carry their names, so a re-commit still finds its markers. A writer made by hand, with
    // no token, gets a random id instead of the tag.
    const tag = ctx.fencing === undefined ? randomUUID() : `${fencingTag(ctx.fencing)}-${randomBytes(6).toString('hex')}`;
    this.txnPrefix = `${config.jobId}/${tag}/${ctx.subtask}`;
    this.checkpointing = ctx.checkpointing !== false;
  }

  write(batch: RecordBatch<T>): void | Promise<void> {
    const values = batch.values;
    const toWrites = this.config.toWrites;
    for (let i = 0; i < values.length; i++) {
      try {
        const out = toWrites(values[i] as T);
        if (out === null || out === undefined) continue;
        if (Array.isArray(out)) for (const w of out as readonly DynamoDbWrite[]) this.staged.add(w);
        else this.staged.add(out as DynamoDbWrite);
      } catch (cause) {
        throw new UserFunctionError(this.ctx.operatorName, this.ctx.subtask, originAt(batch, i), cause);
      }
    }
    if (!this.checkpointing && this.staged.size >= this.config.flushEveryWrites) return this.flush();
  }

  prepareCommit(checkpointId: number): DynamoDbCommittable[] {
    const committable = this.prepare(`c${checkpointId}`);
    return committable === undefined ? [] : [committable];
  }

  async finish(): Promise<void> {
    if (!this.checkpointing) await this.flush();
  }

  private prepare(sequence: string): DynamoDbCommittable | undefined {
    if (this.staged.size === 0) return undefined;
    const chunks = toChunks(this.config.table, this.staged.drain(), this.config.limits);
    if (chunks.length === 0) return undefined;
    return { txn: `${this.txnPrefix}/${sequence}`, preparedAt: Date.now(), chunks };
  }

  /** Without checkpoints: commit what is staged now (nothing else will). */
  private async flush(): Promise<void> {
    const committable = this.prepare(`f${++this.flushes}`);
    if (committable === undefined) return;
    this.committer ??= new DynamoDbCommitter(this.config, this.client(), this.ctx.fencing);
    await this.committer.commit([committable]);
  }
}
