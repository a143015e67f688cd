import type { SourceReader } from '../../source.ts';
import type { DeadLetterWriter } from '../dead-letter.ts';
import type { RetryPolicy } from './backoff.ts';
import type { FinishedShardRegistry } from './finished-shard-registry.ts';
import type { KinesisApi } from './kinesis-api.ts';
import type { KinesisDeserializer } from './record-decoder.ts';
import type { ShardFetcherFactory } from './shard-fetcher.ts';
import type { KinesisShardSplit, ShardPosition } from './shard-split.ts';

/** What one reader needs besides its splits; built by `kinesisSource`. */
export interface KinesisReaderSettings<T> {
  readonly stream: string;
  readonly api: KinesisApi;
  readonly fetchers: ShardFetcherFactory;
  readonly deserialize: KinesisDeserializer<T>;
  readonly deadLetters: DeadLetterWriter | undefined;
  readonly registry: FinishedShardRegistry;
  readonly retry: RetryPolicy;
  /** 0: only at start and when a shard of this reader ends. */
  readonly discoveryIntervalMs: number;
  readonly stopWhenIdleMs: number | undefined;
  /** Where shards start that an aligned reader finds in its first listing (the source's startPosition). */
  readonly start: ShardPosition;
  /** Called once when the reader closes (client, dead-letter writer, registry). */
  readonly release: () => Promise<void>;
  readonly log: (line: string) => void;
}

/** Counters of one reader. */
export interface KinesisReaderCounters {
  /** Records returned to the job. */
  recordsRead: number;
  /** Records the deserializer rejected. */
  deadLetters: number;
  /** Calls retried after throttling (ProvisionedThroughputExceeded, LimitExceeded). */
  throttled: number;
  /** Calls retried after other transient errors. */
  transientErrors: number;
  /** Child shards found by listing the stream while running. */
  shardsDiscovered: number;
  /** Aligned reading: records of other slots' key groups, left out. */
  recordsOfOtherSlots: number;
}

/** A Kinesis source reader, with its counters. */
export interface KinesisSourceReader<T> extends SourceReader<T, KinesisShardSplit> {
  readonly counters: Readonly<KinesisReaderCounters>;
  notifyCheckpointComplete(checkpointId: number): Promise<void>;
}
