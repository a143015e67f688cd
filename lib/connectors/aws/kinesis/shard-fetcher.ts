import type { _Record, ShardIteratorType } from '@aws-sdk/client-kinesis';
import type { ShardPosition } from './shard-split.ts';

export interface FetchedRecords {
  /** In shard order; may be empty. */
  readonly records: readonly _Record[];
  /** The shard is closed and every record of it has now been fetched. */
  readonly end: boolean;
  /** No records, and Kinesis says there are none behind them (MillisBehindLatest 0): evidence of quiet. */
  readonly caughtUp: boolean;
}

/**
 * Fetches one shard's records in order, each call continuing after what the previous returned (GetRecords, or
 * an enhanced fan-out subscription). Errors are thrown as the SDK throws them; the reader retries.
 */
export interface ShardFetcher {
  next(signal: AbortSignal): Promise<FetchedRecords>;
  close(): void;
}

export interface ShardFetcherFactory {
  /** Reading `shardId` from `start`. */
  create(shardId: string, start: ShardPosition): ShardFetcher;
  /** Shortest time from the start of one `next` call of a shard to the next (GetRecords: 5 calls/s per shard). */
  readonly minIntervalMs: number;
}

/** A position as the Kinesis API spells it (GetShardIterator's and SubscribeToShard's StartingPosition fields). */
export function iteratorPosition(position: ShardPosition): {
  Type: ShardIteratorType;
  SequenceNumber?: string;
  Timestamp?: Date;
} {
  switch (position.type) {
    case 'TRIM_HORIZON':
    case 'LATEST':
      return { Type: position.type };
    case 'AT_TIMESTAMP':
      return { Type: 'AT_TIMESTAMP', Timestamp: new Date(position.timestamp) };
    case 'AFTER_SEQUENCE_NUMBER':
      return { Type: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: position.sequenceNumber };
  }
}
