import type { PollResult, SourceReaderContext } from '../../source.ts';
import type { DeadLetter } from '../dead-letter.ts';
import { backoffDelay, sleep } from './backoff.ts';
import { isThrottling, isTransient, KinesisSourceError } from './errors.ts';
import { FinishAnnouncer } from './finish-announcer.ts';
import type { KinesisReaderCounters, KinesisReaderSettings, KinesisSourceReader } from './kinesis-reader-types.ts';
import { listAllShards } from './list-shards.ts';
import { alignedSubSplit, type AlignedKeyGroups } from './aligned-sub-split.ts';
import { caughtUpShards, FETCH_WAIT_MS, idleLongEnough, retryAfter } from './reader-pacing.ts';
import { readerFailure } from './reader-failure.ts';
import { ShardParents } from './shard-parents.ts';
import { decodeRecords, recordDeadLetter, type DecodedChunk } from './record-decoder.ts';
import { newAlignedSplits, newChildSplits, type ShardListing } from './shard-discovery.ts';
import type { ShardFetcher } from './shard-fetcher.ts';
import type { KinesisShardSplit, ShardPosition } from './shard-split.ts';
import { newShardState, shardCaughtUp, type ShardState } from './shard-state.ts';

export type { KinesisReaderCounters, KinesisReaderSettings, KinesisSourceReader } from './kinesis-reader-types.ts';

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
  private readonly parents: ShardParents;
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
    this.parents = new ShardParents({
      shards: this.shards,
      byShard: this.byShard,
      aligned: this.aligned !== undefined,
      registry: settings.registry,
      listed: () => this.listed,
      fail: (error, shardId) => this.fail(error, shardId, 'asking whether another reader finished', 'the finished-shard registry'),
    });
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

  /** See shardCaughtUp: only an empty answer at the tip with nothing fetched since counts. */
  caughtUp(splitId: string): boolean {
    return shardCaughtUp(this.shards.get(splitId)); // undefined: expired from the stream after it finished
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
    const state = newShardState<T>(split, this.aligned);
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

  /** Parents first: the rule that keeps per-key order across SplitShard and MergeShards (ShardParents). */
  private isReady(shard: ShardState<T>): boolean {
    return this.parents.isReady(shard);
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
    this.failure = readerFailure(error, this.settings.stream, shardId, doing, through, retriable);
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
  private discoverChildren(listing: ShardListing): void {
    for (const split of newChildSplits(listing, this.shards)) {
      this.add(split);
      this.counters.shardsDiscovered++;
      this.lastActivityAt = this.ctx.clock.now();
    }
  }

  /**
   * Aligned: every shard that overlaps the slot's key groups and has no sub-split yet. In the first listing they
   * start at the start position; later ones are new (children of a reshard) and start at their beginning.
   */
  private discoverAligned(listing: ShardListing, aligned: AlignedKeyGroups): void {
    const start: ShardPosition = this.firstListing ? this.settings.start : { type: 'TRIM_HORIZON' };
    for (const sub of newAlignedSplits(listing, new Set(this.byShard.keys()), aligned, start)) {
      this.add(sub);
      if (!this.firstListing) this.counters.shardsDiscovered++;
      this.lastActivityAt = this.ctx.clock.now();
    }
    this.firstListing = false;
  }

  /** `stopWhenIdleMs` reached (reader-pacing.ts idleLongEnough). */
  private idleLongEnough(): boolean {
    return idleLongEnough({ order: this.order, paused: this.paused }, this.settings.stopWhenIdleMs, this.listed !== undefined, this.lastActivityAt, this.ctx.clock.now());
  }

  private caughtUpShards(): string[] {
    return caughtUpShards(this.order);
  }

  private retryAfter(now: number): number {
    return retryAfter({ order: this.order, paused: this.paused }, now, this.discovering ? undefined : this.nextDiscoveryAt, this.inflight.size > 0);
  }
}
