import type { PollResult, SourceReader, SourceReaderContext } from '../../source.ts';
import type { DeadLetter, DeadLetterWriter } from '../dead-letter.ts';
import { backoffDelay, sleep, type RetryPolicy } from './backoff.ts';
import { awsErrorName, errorMessage, failureHint, isThrottling, isTransient, KinesisSourceError } from './errors.ts';
import { FinishAnnouncer } from './finish-announcer.ts';
import type { FinishedShardRegistry } from './finished-shard-registry.ts';
import type { KinesisApi } from './kinesis-api.ts';
import { listAllShards } from './list-shards.ts';
import {
  alignedRecordFilter,
  alignedSubSplit,
  FOREIGN_HASH_KEY_REASON,
  shardIdOf,
  type AlignedKeyGroups,
} from './aligned-sub-split.ts';
import { decodeRecords, recordDeadLetter, type DecodedChunk, type KinesisDeserializer, type RecordSelection } from './record-decoder.ts';
import type { ShardFetcher, ShardFetcherFactory } from './shard-fetcher.ts';
import { shardSplit, splitsFromListing, type KinesisShardSplit, type ShardPosition } from './shard-split.ts';

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

/** While fetches are in flight and nothing is ready, `poll` waits this long for one before returning 'wait'. */
const FETCH_WAIT_MS = 10;
/** Longest 'wait' a poll returns, so that discovery, registry checks and idleness are looked at regularly. */
const MAX_WAIT_MS = 100;

interface ShardState<T> {
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

/**
 * Reads the shards one subtask owns. Fetches run in the background, one per shard at a time, paced by the
 * fetcher's interval; `poll` hands out what has been fetched, one shard per batch, round robin. A child shard is
 * read only after its parents are finished: a parent of this subtask once every record of it has been returned,
 * a merge's adjacent parent owned by another subtask once the registry says it is finished (announced after a
 * completed checkpoint) or it has expired from the listing.
 */
export class KinesisShardReader<T> implements KinesisSourceReader<T> {
  readonly counters: KinesisReaderCounters = {
    recordsRead: 0,
    deadLetters: 0,
    throttled: 0,
    transientErrors: 0,
    shardsDiscovered: 0,
    recordsOfOtherSlots: 0,
  };
  /** By split id. */
  private readonly shards = new Map<string, ShardState<T>>();
  /**
   * By shard id. Unaligned: split id = shard id, so `shards` serves. Aligned: a slot's sub-splits of a shard, usually
   * one; several after a restore into another slot layout (each old slot's part, cut to this slot, keeps its position).
   */
  private readonly byShard = new Map<string, ShardState<T>[]>();
  /** Set when a cluster slot reads its kinesis-hash key groups (SourceReaderContext.alignedKeyGroups). */
  private readonly aligned: AlignedKeyGroups | undefined;
  /**
   * Aligned: the first listing adds every shard overlapping the slot at the start position (a fresh slot, or one
   * restored from a checkpoint taken before its first listing); later listings add new shards from their start.
   */
  private firstListing: boolean;
  private order: ShardState<T>[] = [];
  private cursor = 0;
  private readonly inflight = new Set<Promise<void>>();
  private readonly controller = new AbortController();
  private readonly announcer: FinishAnnouncer;
  private failure: unknown;
  /** Shard ids of the latest listing; undefined before the first. */
  private listed: Set<string> | undefined;
  /** Adjacent parents of other subtasks known to be finished (registry answers, cached). */
  private readonly finishedElsewhere = new Set<string>();
  private readonly registryChecks = new Set<string>();
  private discovering = false;
  private nextDiscoveryAt = 0;
  private discoveryFailures = 0;
  private lastActivityAt: number;
  private readonly letterLogged = new Set<string>();
  private started = false;
  private closed = false;
  /** Where the last batch's records are in their chunk (rejectRecord finds them there). */
  private lastBatch: { splitId: string; shardId: string; firstOffset: number; chunk: DecodedChunk<T>; from: number } | undefined;
  /** Shards paused by watermark alignment: neither fetched nor returned, and never idle. */
  private readonly paused = new Set<string>();

  constructor(
    splits: readonly KinesisShardSplit[],
    private readonly ctx: SourceReaderContext,
    private readonly settings: KinesisReaderSettings<T>,
  ) {
    this.aligned = ctx.alignedKeyGroups;
    const aligned = this.aligned;
    if (aligned === undefined) {
      for (const split of splits) this.add(split);
      this.firstListing = false;
    } else {
      // Restored sub-splits are the slot's own; whole-shard splits are cut to the slot's key groups.
      for (const split of splits) {
        const sub = alignedSubSplit(split, aligned);
        if (sub !== undefined) this.add(sub);
      }
      this.firstListing = !splits.some((s) => s.keyGroups !== undefined);
    }
    this.announcer = new FinishAnnouncer(settings.registry, ctx.checkpointing === true);
    this.lastActivityAt = ctx.clock.now();
    const abort = () => this.controller.abort();
    if (ctx.signal.aborted) abort();
    else ctx.signal.addEventListener('abort', abort, { once: true });
  }

  async poll(maxRecords: number): Promise<PollResult<T>> {
    if (!this.started) {
      this.started = true;
      await this.announcer.restored(this.order.filter((s) => s.finished).map((s) => s.split.id));
    }
    this.throwIfFailed();
    const now = performance.now();
    this.maybeDiscover(now);
    this.startFetches(now);
    let result = this.takeBatch(Math.max(1, maxRecords));
    if (result === undefined && this.inflight.size > 0) {
      await Promise.race([...this.inflight, sleep(FETCH_WAIT_MS, this.controller.signal)]);
      this.throwIfFailed();
      result = this.takeBatch(Math.max(1, maxRecords));
    }
    if (result !== undefined) return result;
    if (this.idleLongEnough()) return { kind: 'end' };
    return { kind: 'wait', retryAfterMs: this.retryAfter(performance.now()), caughtUpSplits: this.caughtUpShards() };
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
  }

  /**
   * A record of the last batch was rejected after decoding (an invalid event timestamp): it goes to the dead-letter
   * writer like an undecodable one. Without a writer the job must fail instead (false), as nothing would keep it.
   */
  async rejectRecord(split: string, offset: number, reason: string): Promise<boolean> {
    const last = this.lastBatch;
    const writer = this.settings.deadLetters;
    if (writer === undefined || last === undefined || last.splitId !== split) return false;
    const record = last.chunk.records[last.from + offset - last.firstOffset];
    if (record === undefined || offset < last.firstOffset) return false;
    await writer.write([recordDeadLetter(record, this.settings.stream, last.shardId, reason)]);
    this.counters.deadLetters++;
    this.counters.recordsRead--;
    return true;
  }

  currentSplits(checkpointId?: number): KinesisShardSplit[] {
    if (checkpointId !== undefined) this.announcer.checkpointTaken(checkpointId);
    return this.order.map((s) => ({ ...s.split, position: s.position, finished: s.finished }));
  }

  /**
   * Only an empty answer at the tip (MillisBehindLatest 0) with nothing fetched since counts: a shard whose first
   * fetch has not answered yet, that is behind, or whose last fetch failed (throttled, retried) may have records
   * waiting, and must hold the watermark back rather than go idle.
   */
  caughtUp(splitId: string): boolean {
    const shard = this.shards.get(splitId);
    if (shard === undefined) return true; // expired from the stream after it finished
    if (shard.finished) return true;
    return shard.quietSince !== undefined && shard.retries === 0 && shard.chunk === undefined && !shard.endFetched && shard.ready;
  }

  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    return this.announcer.checkpointComplete(checkpointId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // In-flight fetches are aborted and their results ignored; an open subscription need not be waited for.
    this.controller.abort();
    for (const s of this.order) s.fetcher?.close();
    await this.settings.release();
  }

  private add(split: KinesisShardSplit): ShardState<T> {
    const aligned = this.aligned;
    const state: ShardState<T> = {
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
    this.shards.set(split.id, state);
    const same = this.byShard.get(state.shardId);
    if (same === undefined) this.byShard.set(state.shardId, [state]);
    else same.push(state);
    this.order.push(state);
    return state;
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** The next batch: records of one shard, or an empty batch that reports a shard finished. */
  private takeBatch(max: number): PollResult<T> | undefined {
    const n = this.order.length;
    for (let step = 0; step < n; step++) {
      if (this.cursor >= n) this.cursor = 0;
      const shard = this.order[this.cursor] as ShardState<T>;
      this.cursor++;
      if (this.paused.has(shard.split.id)) continue;
      const chunk = shard.chunk;
      if (chunk !== undefined) {
        const from = shard.index;
        const to = Math.min(chunk.values.length, from + max);
        const whole = from === 0 && to === chunk.values.length;
        const values = whole ? chunk.values : chunk.values.slice(from, to);
        const timestamps = whole ? chunk.timestamps : chunk.timestamps.slice(from, to);
        if (to === chunk.values.length) {
          shard.position = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: chunk.lastSequenceNumber };
          shard.chunk = undefined;
          shard.index = 0;
        } else {
          shard.position = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: chunk.sequenceNumbers[to - 1] as string };
          shard.index = to;
        }
        const finishedNow = shard.chunk === undefined && shard.endFetched;
        if (finishedNow) this.finish(shard);
        else if (values.length === 0) continue; // a fetch of dead letters only
        const offsets = new Array<number>(values.length);
        for (let i = 0; i < values.length; i++) offsets[i] = shard.ordinal + i;
        this.lastBatch = { splitId: shard.split.id, shardId: shard.shardId, firstOffset: shard.ordinal, chunk, from };
        shard.ordinal += values.length;
        this.counters.recordsRead += values.length;
        this.lastActivityAt = this.ctx.clock.now();
        return {
          kind: 'batch',
          batch: { values, timestamps, split: shard.split.id, offsets },
          ...(finishedNow ? { finishedSplits: [shard.split.id] } : {}),
        };
      }
      if (shard.endFetched && !shard.finished) {
        this.finish(shard);
        return { kind: 'batch', batch: { values: [], timestamps: [], split: shard.split.id, offsets: [] }, finishedSplits: [shard.split.id] };
      }
    }
    return undefined;
  }

  /** Marks `shard` finished; its children may be new, so the stream is listed again soon. */
  private finish(shard: ShardState<T>): void {
    shard.finished = true;
    shard.fetcher?.close();
    shard.fetcher = undefined;
    this.lastActivityAt = this.ctx.clock.now();
    this.nextDiscoveryAt = 0;
    this.announcer.finished(shard.split.id).catch((error: unknown) => this.fail(error, shard.split.id, 'announcing as finished', 'the finished-shard registry'));
  }

  private startFetches(now: number): void {
    for (const shard of this.order) {
      if (shard.finished || shard.endFetched || shard.fetching || shard.chunk !== undefined || now < shard.nextFetchAt) continue;
      if (this.paused.has(shard.split.id) || !this.isReady(shard)) continue;
      this.launchFetch(shard, now);
    }
  }

  /** Parents first: the rule that keeps per-key order across SplitShard and MergeShards. */
  private isReady(shard: ShardState<T>): boolean {
    if (shard.ready) return true;
    if (this.aligned !== undefined) return this.alignedReady(shard);
    const parent = shard.split.parentShardId;
    if (parent !== undefined) {
      // A first parent always has this shard's owner; absent from this reader, it has expired.
      const p = this.shards.get(parent);
      if (p !== undefined && !p.finished) return false;
    }
    const adjacent = shard.split.adjacentParentShardId;
    if (adjacent !== undefined && !this.adjacentFinished(adjacent)) return false;
    shard.ready = true;
    return true;
  }

  /**
   * Aligned: a child's records of this slot's key groups can only follow records of the same key groups in its
   * parents, that is this slot's sub-splits of them. So the child waits for those alone, whoever else reads the
   * parents: a parent this slot has no sub-split of holds none of its key groups (or has expired).
   */
  private alignedReady(shard: ShardState<T>): boolean {
    for (const parent of [shard.split.parentShardId, shard.split.adjacentParentShardId]) {
      if (parent === undefined) continue;
      const parts = this.byShard.get(parent);
      if (parts !== undefined && parts.some((p) => !p.finished)) return false;
    }
    shard.ready = true;
    return true;
  }

  private adjacentFinished(shardId: string): boolean {
    const local = this.shards.get(shardId);
    if (local !== undefined) return local.finished;
    if (this.finishedElsewhere.has(shardId)) return true;
    if (this.listed !== undefined && !this.listed.has(shardId)) return true; // expired: nothing left to wait for
    const answer = this.settings.registry.isFinished(shardId);
    if (typeof answer === 'boolean') {
      if (answer) this.finishedElsewhere.add(shardId);
      return answer;
    }
    if (!this.registryChecks.has(shardId)) {
      this.registryChecks.add(shardId);
      answer.then(
        (done) => {
          if (done) this.finishedElsewhere.add(shardId);
          this.registryChecks.delete(shardId);
        },
        (error: unknown) => this.fail(error, shardId, 'asking whether another reader finished', 'the finished-shard registry'),
      );
    }
    return false;
  }

  private launchFetch(shard: ShardState<T>, now: number): void {
    if (shard.fetcher === undefined) {
      shard.fetcher = this.settings.fetchers.create(shard.shardId, shard.position);
      // LATEST is pinned to a time, so a restart from a checkpoint taken before the first record skips nothing.
      if (shard.position.type === 'LATEST') shard.position = { type: 'AT_TIMESTAMP', timestamp: Date.now() };
    }
    shard.fetching = true;
    const fetch = this.fetch(shard, now).finally(() => {
      shard.fetching = false;
      this.inflight.delete(fetch);
    });
    this.inflight.add(fetch);
  }

  private async fetch(shard: ShardState<T>, startedAt: number): Promise<void> {
    const fetcher = shard.fetcher as ShardFetcher;
    try {
      const got = await fetcher.next(this.controller.signal);
      if (this.closed) return;
      if (got.records.length > 0) {
        const chunk = decodeRecords(got.records, this.settings.stream, shard.shardId, this.settings.deserialize, shard.selection);
        if (shard.selection !== undefined) {
          this.counters.recordsOfOtherSlots += got.records.length - chunk.values.length - chunk.deadLetters.length;
        }
        // Dead letters are stored before the position can move past their records.
        if (chunk.deadLetters.length > 0) await this.deadLetter(chunk.deadLetters, shard.shardId);
        shard.chunk = chunk;
      }
      if (got.end) shard.endFetched = true;
      if (got.caughtUp && got.records.length === 0) shard.quietSince ??= this.ctx.clock.now();
      else shard.quietSince = undefined;
      shard.failures = 0;
      shard.retries = 0;
      shard.nextFetchAt = startedAt + this.settings.fetchers.minIntervalMs;
    } catch (error) {
      if (this.controller.signal.aborted) return;
      const retryable = isTransient(error) && !(error instanceof KinesisSourceError && error.retriable === false);
      if (!retryable) return this.fail(error, shard.split.id, 'reading');
      shard.retries++;
      if (isThrottling(error)) this.counters.throttled++;
      else {
        this.counters.transientErrors++;
        shard.failures++;
        if (shard.failures >= this.settings.retry.maxAttempts) {
          return this.fail(error, shard.split.id, `reading (${shard.failures} attempts in a row)`, undefined, true);
        }
      }
      shard.nextFetchAt = performance.now() + backoffDelay(this.settings.retry, shard.retries);
    }
  }

  private async deadLetter(letters: DeadLetter[], shardId: string): Promise<void> {
    this.counters.deadLetters += letters.length;
    const writer = this.settings.deadLetters;
    if (writer !== undefined) {
      await writer.write(letters);
      return;
    }
    if (!this.letterLogged.has(shardId)) {
      this.letterLogged.add(shardId);
      const first = letters[0] as DeadLetter;
      this.settings.log(
        `kinesis source "${this.settings.stream}": skipped a record of ${shardId} (sequence number ${first.sequenceNumber}: ${first.reason}); set deadLetters to keep such records. Further ones of this shard are only counted.`,
      );
    }
  }

  /** Records the reader's failure; the next poll throws it (the job fails and restarts from its checkpoint). */
  private fail(error: unknown, shardId: string | undefined, doing: string, through = 'Kinesis', retriable = isTransient(error)): void {
    if (this.failure !== undefined || this.closed) return;
    const where = shardId === undefined ? `stream "${this.settings.stream}"` : `shard ${shardId} of stream "${this.settings.stream}"`;
    const name = awsErrorName(error);
    this.failure =
      error instanceof KinesisSourceError
        ? error
        : new KinesisSourceError(
            `kinesis source: ${doing} ${where} failed${name === undefined ? '' : ` with ${name}`}: ${errorMessage(error)} (${failureHint(name, through, retriable)})`,
            shardId,
            { cause: error, retriable },
          );
  }

  private maybeDiscover(now: number): void {
    if (this.discovering || now < this.nextDiscoveryAt || this.failure !== undefined) return;
    this.discovering = true;
    const run = this.discover()
      .then(
        () => {
          this.discoveryFailures = 0;
          const interval = this.settings.discoveryIntervalMs;
          this.nextDiscoveryAt = interval > 0 ? performance.now() + interval : Number.POSITIVE_INFINITY;
        },
        (error: unknown) => {
          if (this.controller.signal.aborted) return;
          if (!isTransient(error)) return this.fail(error, undefined, 'listing the shards of');
          this.discoveryFailures++;
          if (isThrottling(error)) this.counters.throttled++;
          else this.counters.transientErrors++;
          if (!isThrottling(error) && this.discoveryFailures >= this.settings.retry.maxAttempts) {
            return this.fail(error, undefined, `listing (${this.discoveryFailures} attempts in a row) the shards of`, undefined, true);
          }
          this.nextDiscoveryAt = performance.now() + backoffDelay(this.settings.retry, this.discoveryFailures);
        },
      )
      .finally(() => {
        this.discovering = false;
        this.inflight.delete(run);
      });
    this.inflight.add(run);
  }

  /**
   * Claims new children of this reader's shards (a child has its first parent's owner), and forgets finished
   * shards that have expired from the stream (no child can wait for them any more).
   */
  private async discover(): Promise<void> {
    const listing = await listAllShards(this.settings.api, this.settings.stream, this.controller.signal);
    if (this.closed) return;
    const ids = new Set<string>();
    for (const shard of listing) if (shard.ShardId !== undefined) ids.add(shard.ShardId);
    if (this.aligned !== undefined) this.discoverAligned(listing, this.aligned);
    else this.discoverChildren(listing);
    const expired = this.order.filter((s) => s.finished && !ids.has(s.shardId));
    if (expired.length > 0) {
      for (const s of expired) {
        this.shards.delete(s.split.id);
        const left = this.byShard.get(s.shardId)?.filter((p) => p !== s) ?? [];
        if (left.length === 0) this.byShard.delete(s.shardId);
        else this.byShard.set(s.shardId, left);
      }
      this.order = this.order.filter((s) => !expired.includes(s));
    }
    this.listed = ids;
  }

  /** Children of this reader's shards (a child has its first parent's owner). */
  private discoverChildren(listing: Awaited<ReturnType<typeof listAllShards>>): void {
    for (const shard of listing) {
      const id = shard.ShardId;
      if (id === undefined || this.shards.has(id) || shard.ParentShardId === undefined) continue;
      const parent = this.shards.get(shard.ParentShardId);
      if (parent === undefined) continue;
      this.add(shardSplit(shard, parent.split.rootShardId, { type: 'TRIM_HORIZON' }));
      this.counters.shardsDiscovered++;
      this.lastActivityAt = this.ctx.clock.now();
    }
  }

  /**
   * Aligned: every shard that overlaps the slot's key groups and has no sub-split yet. In the first listing they
   * start at the start position; later ones are new (children of a reshard) and start at their beginning.
   */
  private discoverAligned(listing: Awaited<ReturnType<typeof listAllShards>>, aligned: AlignedKeyGroups): void {
    const start: ShardPosition = this.firstListing ? this.settings.start : { type: 'TRIM_HORIZON' };
    for (const split of splitsFromListing(listing, start)) {
      if (this.byShard.has(split.id)) continue;
      const sub = alignedSubSplit(split, aligned);
      if (sub === undefined) continue;
      this.add(sub);
      if (!this.firstListing) this.counters.shardsDiscovered++;
      this.lastActivityAt = this.ctx.clock.now();
    }
    this.firstListing = false;
  }

  /**
   * `stopWhenIdleMs`: nothing was read or discovered for that long, and every readable shard has been found
   * caught up, with nothing new, for that long. Start-up (consumer registration), throttled stretches without a
   * single answer, and pauses between fan-out subscriptions are not idle time. Shards waiting for a parent of
   * another subtask do not keep the reader going.
   */
  private idleLongEnough(): boolean {
    const idleMs = this.settings.stopWhenIdleMs;
    if (idleMs === undefined || this.listed === undefined) return false;
    const now = this.ctx.clock.now();
    if (now - this.lastActivityAt < idleMs) return false;
    for (const s of this.order) {
      if (s.finished) continue;
      if (s.chunk !== undefined || s.endFetched || this.paused.has(s.split.id)) return false;
      if (s.ready && (s.quietSince === undefined || now - s.quietSince < idleMs)) return false;
    }
    return true;
  }

  /** Shards with nothing to read now: at the tip at their last fetch, or waiting for their parents. */
  private caughtUpShards(): string[] {
    const ids: string[] = [];
    for (const s of this.order) {
      if (s.finished || s.chunk !== undefined) continue;
      if (!s.ready || s.quietSince !== undefined) ids.push(s.split.id);
    }
    return ids;
  }

  private retryAfter(now: number): number {
    let next = now + MAX_WAIT_MS;
    for (const s of this.order) {
      if (s.finished || s.endFetched || s.fetching || s.chunk !== undefined || !s.ready || this.paused.has(s.split.id)) continue;
      next = Math.min(next, s.nextFetchAt);
    }
    if (!this.discovering) next = Math.min(next, this.nextDiscoveryAt);
    if (this.inflight.size > 0) next = Math.min(next, now + FETCH_WAIT_MS);
    return Math.max(1, Math.ceil(next - now));
  }
}
