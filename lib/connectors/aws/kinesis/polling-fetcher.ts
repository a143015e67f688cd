import type { _Record } from '@aws-sdk/client-kinesis';
import { awsErrorName } from './errors.ts';
import { streamRef, type KinesisApi } from './kinesis-api.ts';
import { iteratorPosition, type FetchedRecords, type ShardFetcher, type ShardFetcherFactory } from './shard-fetcher.ts';
import type { ShardPosition } from './shard-split.ts';

export interface PollingFetcherSettings {
  /** Records per GetRecords call (Kinesis allows 1..10000). */
  readonly maxRecordsPerCall: number;
  readonly intervalMs: number;
}

/** GetRecords readers: one shard iterator per shard. */
export function pollingFetcherFactory(api: KinesisApi, stream: string, settings: PollingFetcherSettings): ShardFetcherFactory {
  return {
    minIntervalMs: settings.intervalMs,
    create: (shardId, start) => new PollingShardFetcher(api, stream, shardId, start, settings.maxRecordsPerCall),
  };
}

const NO_RECORDS: readonly _Record[] = [];

/**
 * Reads a shard with GetShardIterator + GetRecords. An expired iterator (5 minutes unused, e.g. under
 * backpressure) is replaced by one AFTER_SEQUENCE_NUMBER of the last record fetched, so nothing is skipped or
 * fetched twice. A LATEST start is pinned to the time the first iterator was asked for, so a new iterator
 * continues from there rather than from the new tip.
 */
export class PollingShardFetcher implements ShardFetcher {
  private iterator: string | undefined;
  private resume: ShardPosition;
  private ended = false;

  constructor(
    private readonly api: KinesisApi,
    private readonly stream: string,
    private readonly shardId: string,
    start: ShardPosition,
    private readonly maxRecordsPerCall: number,
  ) {
    this.resume = start;
  }

  async next(signal: AbortSignal): Promise<FetchedRecords> {
    if (this.ended) return { records: NO_RECORDS, end: true, caughtUp: true };
    this.iterator ??= await this.newIterator(signal);
    if (this.iterator === undefined) return this.end();
    let out;
    try {
      out = await this.api.getRecords({ ShardIterator: this.iterator, Limit: this.maxRecordsPerCall }, signal);
    } catch (error) {
      if (awsErrorName(error) !== 'ExpiredIteratorException') throw error;
      this.iterator = await this.newIterator(signal);
      if (this.iterator === undefined) return this.end();
      out = await this.api.getRecords({ ShardIterator: this.iterator, Limit: this.maxRecordsPerCall }, signal);
    }
    const records = out.Records ?? NO_RECORDS;
    const last = records[records.length - 1];
    if (last?.SequenceNumber !== undefined) this.resume = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: last.SequenceNumber };
    this.iterator = out.NextShardIterator ?? undefined;
    if (this.iterator === undefined) this.ended = true;
    return { records, end: this.ended, caughtUp: records.length === 0 && (out.MillisBehindLatest ?? 0) === 0 };
  }

  close(): void {
    this.iterator = undefined;
  }

  private end(): FetchedRecords {
    this.ended = true;
    return { records: NO_RECORDS, end: true, caughtUp: true };
  }

  private async newIterator(signal: AbortSignal): Promise<string | undefined> {
    const pinnedAt = Date.now();
    const { Type, SequenceNumber, Timestamp } = iteratorPosition(this.resume);
    const out = await this.api.getShardIterator(
      {
        ...streamRef(this.stream),
        ShardId: this.shardId,
        ShardIteratorType: Type,
        ...(SequenceNumber === undefined ? {} : { StartingSequenceNumber: SequenceNumber }),
        ...(Timestamp === undefined ? {} : { Timestamp }),
      },
      signal,
    );
    if (this.resume.type === 'LATEST') this.resume = { type: 'AT_TIMESTAMP', timestamp: pinnedAt };
    return out.ShardIterator ?? undefined;
  }
}
