import { randomUUID } from 'node:crypto';
import { ConfigError, fencingTag } from '../../../core/index.ts';
import type { Source, SourceReaderContext, SplitEnumeratorContext } from '../../source.ts';
import type { DeadLetterWriter } from '../dead-letter.ts';
import { backoffDelay, compileRetry, sleep, type RetryOptions, type RetryPolicy } from './backoff.ts';
import { isTransient } from './errors.ts';
import { ensureStreamConsumer, fanOutFetcherFactory } from './fan-out-fetcher.ts';
import {
  broadcastFinishedShardRegistry,
  type FinishedShardRegistryFactory,
} from './finished-shard-registry.ts';
import { checkAlignedKeyGroups } from './aligned-sub-split.ts';
import { acquireKinesisApi, type KinesisApi, type KinesisClientOptions } from './kinesis-api.ts';
import { KinesisShardReader, type KinesisSourceReader } from './kinesis-reader.ts';
import { listAllShards } from './list-shards.ts';
import { pollingFetcherFactory } from './polling-fetcher.ts';
import { jsonDeserializer, type KinesisDeserializer } from './record-decoder.ts';
import type { ShardFetcherFactory } from './shard-fetcher.ts';
import { ownerOfRoot, splitsFromListing, type KinesisShardSplit, type ShardPosition } from './shard-split.ts';

/** Where a job without a checkpoint starts reading the shards that exist when it starts. */
export type KinesisStartPosition = 'TRIM_HORIZON' | 'LATEST' | { readonly atTimestamp: number | Date };

/** GetRecords polling: each shard is read with its own iterator, shared throughput with other consumers. */
export interface KinesisPollingReaderOptions {
  readonly type: 'polling';
  /** Least time between two GetRecords calls of one shard; Kinesis allows 5 calls/s per shard. @default 200 */
  readonly intervalMs?: number;
  /** Records per GetRecords call, 1..10000. @default 10000 */
  readonly maxRecordsPerCall?: number;
}

/** Enhanced fan-out: SubscribeToShard pushes records over HTTP/2 with 2 MB/s per shard for this consumer alone. */
export interface KinesisFanOutReaderOptions {
  readonly type: 'fan-out';
  /** Registered on the stream if missing (and left registered: it is reused by later runs). */
  readonly consumerName: string;
  /** An existing consumer's ARN: skips registration. @default registered from consumerName */
  readonly consumerArn?: string;
}

export interface KinesisSourceOptions<T> extends KinesisClientOptions {
  /** Stream name or ARN. */
  readonly stream: string;
  /**
   * Start of a job that has no checkpoint, for the shards it finds at start; shards created later (children) are
   * read from their beginning. LATEST means records that arrive after the reader first asks for each shard.
   * @default 'LATEST'
   */
  readonly startPosition?: KinesisStartPosition;
  /** Bytes to value; throwing sends the record to `deadLetters`. @default UTF-8 JSON.parse */
  readonly deserializer?: KinesisDeserializer<T>;
  /**
   * Where records that fail to deserialize go (with shard id, sequence number, data in base64 and the reason);
   * the job goes on. A writer object is shared by all readers of a thread and never closed by them; a function
   * is called once per reader, which closes what it returns. @default none: such records are counted and skipped,
   * with one line on stderr per shard
   */
  readonly deadLetters?: DeadLetterWriter | (() => DeadLetterWriter);
  /** @default { type: 'polling' } */
  readonly reader?: KinesisPollingReaderOptions | KinesisFanOutReaderOptions;
  /**
   * How often each reader lists the stream to find child shards after a reshard. A reader also lists it as soon
   * as one of its shards ends. 0: only then. @default 10000
   */
  readonly shardDiscoveryIntervalMs?: number;
  /**
   * End reading once no record arrived on any owned shard, and no shard was discovered, for this long: the job
   * then fires its windows, commits and exits (batch-like jobs over a stream). @default undefined (read forever)
   */
  readonly stopWhenIdleMs?: number;
  /** Backoff of throttled and failed calls. @default 100 ms base, 5 s ceiling, 10 attempts (throttling: unlimited) */
  readonly retry?: RetryOptions;
  /**
   * How readers of one job attempt learn that another reader's shard is finished (merged children wait for
   * their adjacent parent). @default a BroadcastChannel between the threads of this process
   */
  readonly finishedShards?: FinishedShardRegistryFactory;
  /**
   * Source name in the plan, in errors and in the finished-shard registry: two sources of one job reading the same
   * stream need different names. @default `kinesis:<stream>`
   */
  readonly name?: string;
  /** Warnings (skipped records). @default stderr */
  readonly log?: (line: string) => void;
}

/** The Kinesis source, with its split and reader types spelled out. */
export interface KinesisSource<T> extends Source<T, KinesisShardSplit> {
  createSplits(ctx: SplitEnumeratorContext): Promise<KinesisShardSplit[]>;
  subtaskOf(split: KinesisShardSplit, parallelism: number): number;
  createReader(splits: KinesisShardSplit[], ctx: SourceReaderContext): KinesisSourceReader<T>;
}

interface CompiledSourceOptions<T> {
  readonly stream: string;
  readonly start: ShardPosition;
  readonly deserialize: KinesisDeserializer<T>;
  readonly reader: { readonly type: 'polling'; readonly intervalMs: number; readonly maxRecordsPerCall: number } | KinesisFanOutReaderOptions;
  readonly discoveryIntervalMs: number;
  readonly stopWhenIdleMs: number | undefined;
  readonly retry: RetryPolicy;
  readonly registry: FinishedShardRegistryFactory;
  readonly log: (line: string) => void;
}

/** GetRecords calls per second and shard that Kinesis allows. */
const MIN_POLL_INTERVAL_MS = 200;

function compileStart(start: KinesisStartPosition | undefined): ShardPosition {
  if (start === undefined || start === 'LATEST') return { type: 'LATEST' };
  if (start === 'TRIM_HORIZON') return { type: 'TRIM_HORIZON' };
  if (typeof start === 'object' && start !== null && 'atTimestamp' in start) {
    const t = start.atTimestamp instanceof Date ? start.atTimestamp.getTime() : start.atTimestamp;
    if (!Number.isFinite(t)) throw new ConfigError(`kinesis source: startPosition.atTimestamp must be a date or epoch ms, got ${String(start.atTimestamp)}`);
    return { type: 'AT_TIMESTAMP', timestamp: t };
  }
  throw new ConfigError(`kinesis source: startPosition must be 'TRIM_HORIZON', 'LATEST' or { atTimestamp }, got ${JSON.stringify(start)}`);
}

function compile<T>(options: KinesisSourceOptions<T>): CompiledSourceOptions<T> {
  if (typeof options.stream !== 'string' || options.stream.length === 0) {
    throw new ConfigError('kinesis source: `stream` (a stream name or ARN) is required');
  }
  const int = (name: string, v: number | undefined, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (v === undefined) return fallback;
    if (!Number.isSafeInteger(v) || v < min || v > max) {
      throw new ConfigError(`kinesis source: ${name} must be an integer in ${min}..${max}, got ${v}`);
    }
    return v;
  };
  const r = options.reader ?? { type: 'polling' };
  let reader: CompiledSourceOptions<T>['reader'];
  if (r.type === 'polling') {
    reader = {
      type: 'polling',
      intervalMs: int('reader.intervalMs', r.intervalMs, MIN_POLL_INTERVAL_MS, MIN_POLL_INTERVAL_MS),
      maxRecordsPerCall: int('reader.maxRecordsPerCall', r.maxRecordsPerCall, 10000, 1, 10000),
    };
  } else if (r.type === 'fan-out') {
    if (typeof r.consumerName !== 'string' || r.consumerName.length === 0) {
      throw new ConfigError('kinesis source: reader.consumerName is required for enhanced fan-out');
    }
    reader = r;
  } else {
    throw new ConfigError(`kinesis source: reader.type must be 'polling' or 'fan-out', got ${JSON.stringify((r as { type: unknown }).type)}`);
  }
  const idle = options.stopWhenIdleMs;
  if (idle !== undefined && !(Number.isFinite(idle) && idle > 0)) {
    throw new ConfigError(`kinesis source: stopWhenIdleMs must be a positive number of milliseconds, got ${idle}`);
  }
  return {
    stream: options.stream,
    start: compileStart(options.startPosition),
    deserialize: options.deserializer ?? (jsonDeserializer as KinesisDeserializer<T>),
    reader,
    discoveryIntervalMs: int('shardDiscoveryIntervalMs', options.shardDiscoveryIntervalMs, 10000, 0),
    stopWhenIdleMs: idle,
    retry: compileRetry('kinesis source', options.retry),
    registry: options.finishedShards ?? broadcastFinishedShardRegistry,
    log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
  };
}

async function listWithRetry(api: KinesisApi, stream: string, policy: RetryPolicy): Promise<Awaited<ReturnType<typeof listAllShards>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await listAllShards(api, stream);
    } catch (error) {
      if (!isTransient(error) || attempt >= policy.maxAttempts) throw error;
      await sleep(backoffDelay(policy, attempt));
    }
  }
}

/**
 * Reads a Kinesis data stream. Splits are shards; each shard has one owner subtask for its whole life, and its
 * children stay with it (`subtaskOf`), so a reader sequences a split's children itself; merged children whose
 * adjacent parent another subtask reads wait until that parent's end is in a completed checkpoint. Positions
 * (sequence numbers) are checkpointed per shard. Batch timestamps are ApproximateArrivalTimestamp (a watermark
 * strategy's timestamp assigner overrides them); offsets count records per shard within one run.
 * See docs/connectors/kinesis.md.
 */
export function kinesisSource<T = unknown>(options: KinesisSourceOptions<T>): KinesisSource<T> {
  const opts = compile(options);
  const name = options.name ?? `kinesis:${opts.stream}`;
  return {
    name,
    bounded: opts.stopWhenIdleMs !== undefined,
    // Shards are read side by side: each holds the watermark back until it has records, goes idle or ends.
    concurrentSplits: true,
    // Shards lag the tip by different amounts (a resharded parent, a slow fetch): aligned, one far ahead waits.
    alignsWatermarks: true,
    // A cluster slot can read exactly its kinesis-hash key groups (SourceReaderContext.alignedKeyGroups).
    supportsKeyGroupAlignment: true,
    async createSplits(): Promise<KinesisShardSplit[]> {
      const lease = acquireKinesisApi(options);
      try {
        return splitsFromListing(await listWithRetry(lease.api, opts.stream, opts.retry), opts.start);
      } finally {
        lease.release();
      }
    },
    subtaskOf(split: KinesisShardSplit, parallelism: number): number {
      return ownerOfRoot(split.rootShardId, parallelism);
    },
    createReader(splits: KinesisShardSplit[], ctx: SourceReaderContext): KinesisSourceReader<T> {
      checkAlignedKeyGroups(ctx.alignedKeyGroups, `kinesis source "${name}"`);
      const lease = acquireKinesisApi(options);
      // A reader made by hand (no fencing token) shares finished shards with no one.
      const attemptTag = ctx.fencing === undefined ? randomUUID() : fencingTag(ctx.fencing);
      const registry = opts.registry({ attemptTag, stream: opts.stream, source: name, subtask: ctx.subtask });
      const owned = typeof options.deadLetters === 'function' ? options.deadLetters() : undefined;
      const deadLetters = owned ?? (options.deadLetters as DeadLetterWriter | undefined);
      let fetchers: ShardFetcherFactory;
      const reader = opts.reader;
      if (reader.type === 'polling') {
        fetchers = pollingFetcherFactory(lease.api, opts.stream, reader);
      } else {
        let arn: Promise<string> | undefined;
        const consumerArn = (): Promise<string> =>
          (arn ??=
            reader.consumerArn !== undefined
              ? Promise.resolve(reader.consumerArn)
              : ensureStreamConsumer(lease.api, opts.stream, reader.consumerName, opts.retry, ctx.signal).catch((error: unknown) => {
                  arn = undefined; // a failed registration is tried again by the next fetch
                  throw error;
                }));
        fetchers = fanOutFetcherFactory(lease.api, consumerArn);
      }
      return new KinesisShardReader<T>(splits, ctx, {
        stream: opts.stream,
        api: lease.api,
        fetchers,
        deserialize: opts.deserialize,
        deadLetters,
        registry,
        retry: opts.retry,
        discoveryIntervalMs: opts.discoveryIntervalMs,
        stopWhenIdleMs: opts.stopWhenIdleMs,
        start: opts.start,
        log: opts.log,
        release: async () => {
          try {
            await owned?.close?.();
            await registry.close();
          } finally {
            lease.release();
          }
        },
      });
    },
  };
}
