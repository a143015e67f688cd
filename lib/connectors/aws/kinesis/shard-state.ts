import { alignedRecordFilter, FOREIGN_HASH_KEY_REASON, shardIdOf, type AlignedKeyGroups } from './aligned-sub-split.ts';
import type { DecodedChunk, RecordSelection } from './record-decoder.ts';
import type { ShardFetcher } from './shard-fetcher.ts';
import type { KinesisShardSplit, ShardPosition } from './shard-split.ts';

/** What a Kinesis reader knows of one split it reads: position, parents, fetch pacing and fetched records. */
export interface ShardState<T> {
  readonly split: KinesisShardSplit;
  /** The shard read (a sub-split's shard; the split id otherwise). */
  readonly shardId: string;
  /** Aligned sub-splits: which fetched records are the slot's. */
  readonly selection: RecordSelection | undefined;
  /** After the last record returned to the job (or the start position before any). */
  position: ShardPosition;
  /** Every record returned to the job (the shard is closed). */
  finished: boolean;
  /** Both parents are read to their end (and, for a parent of another subtask, its end is checkpointed). */
  ready: boolean;
  fetcher: ShardFetcher | undefined;
  fetching: boolean;
  /** The fetcher reached the end of the closed shard. */
  endFetched: boolean;
  /**
   * Since when every successful fetch found the shard caught up with nothing new (undefined: records or a
   * behind-the-tip answer since, or no answer yet). Failed fetches neither start nor break it.
   */
  quietSince: number | undefined;
  /** Fetched records not yet returned to the job, from `index` on. */
  chunk: DecodedChunk<T> | undefined;
  index: number;
  /** performance.now() before which the next fetch may not start (rate limit, backoff). */
  nextFetchAt: number;
  /** Consecutive failed fetches that were not throttling (bounded by retry.maxAttempts). */
  failures: number;
  /** Consecutive failed fetches of any kind (backoff exponent). */
  retries: number;
  /** Records returned so far in this run: the batch offsets. */
  ordinal: number;
}

/** The state of a split as it starts being read: at its stored position, nothing fetched. */
export function newShardState<T>(split: KinesisShardSplit, aligned: AlignedKeyGroups | undefined): ShardState<T> {
  return {
    split,
    shardId: shardIdOf(split),
    selection:
      aligned === undefined || split.keyGroups === undefined
        ? undefined
        : { fate: alignedRecordFilter(split, aligned.maxParallelism), foreignReason: FOREIGN_HASH_KEY_REASON },
    position: split.position,
    finished: split.finished,
    ready: split.finished,
    fetcher: undefined,
    fetching: false,
    endFetched: split.finished,
    quietSince: undefined,
    chunk: undefined,
    index: 0,
    nextFetchAt: 0,
    failures: 0,
    retries: 0,
    ordinal: 0,
  };
}

/**
 * Only an empty answer at the tip (MillisBehindLatest 0) with nothing fetched since counts: a shard whose first
 * fetch has not answered yet, that is behind, or whose last fetch failed (throttled, retried) may have records
 * waiting, and must hold the watermark back rather than go idle. A shard no longer read (expired after it
 * finished: undefined) is caught up.
 */
export function shardCaughtUp(shard: ShardState<unknown> | undefined): boolean {
  if (shard === undefined) return true;
  if (shard.finished) return true;
  return shard.quietSince !== undefined && shard.retries === 0 && shard.chunk === undefined && !shard.endFetched && shard.ready;
}
