import type { PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { ConfigError, type RecordBatch } from '../../../core/index.ts';
import type { SinkContext, TwoPhaseCommitSink, TwoPhaseCommitSinkWriter } from '../../sink.ts';
import { compileRetry, type RetryOptions, type RetryPolicy } from './backoff.ts';
import { errorMessage, KinesisSinkError } from './errors.ts';
import { acquireKinesisApi, type KinesisApiLease, type KinesisClientOptions } from './kinesis-api.ts';
import { entrySize, MAX_RECORD_BYTES, PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_ENTRIES, putRecordsWithRetry } from './put-records.ts';

export interface KinesisSinkOptions<T> extends KinesisClientOptions {
  /** Stream name or ARN. */
  readonly stream: string;
  /** The record's partition key (1..256 characters): records of one key go to one shard, in order. */
  readonly partitionKey: (value: T) => string;
  /** Value to bytes; a string is written as UTF-8. @default JSON.stringify as UTF-8 */
  readonly serializer?: (value: T) => Uint8Array | string;
  /** Picks the shard by hash key instead of the partition key's MD5 (undefined: by partition key). @default none */
  readonly explicitHashKey?: (value: T) => string | undefined;
  /** Records per PutRecords call, 1..500. @default 500 */
  readonly maxBatchRecords?: number;
  /** Bytes (data plus partition keys) per PutRecords call, up to 5 MiB. @default 5 MiB */
  readonly maxBatchBytes?: number;
  /**
   * PutRecords calls one writer has in flight before `write` waits (backpressure). With 1, and no entry failing,
   * records of a partition key arrive in the order written; a failed entry is retried after later ones.
   * @default 4
   */
  readonly maxInFlightRequests?: number;
  /** A partly filled call is sent after this long without more records. @default 100 */
  readonly lingerMs?: number;
  /** Backoff of throttled and failed calls and entries. @default 100 ms base, 5 s ceiling, 10 attempts (throttling: unlimited) */
  readonly retry?: RetryOptions;
  /** Sink name in the plan and in errors. @default `kinesis:<stream>` */
  readonly name?: string;
}

/**
 * An at-least-once Kinesis sink. It takes part in checkpoints through the two-phase-commit hooks only to flush:
 * `prepareCommit` returns once every record written before the barrier is acknowledged by Kinesis (as Flink's
 * Kinesis sink flushes on checkpoints), so a completed checkpoint never depends on a record still in flight.
 * There is nothing to commit afterwards, and after a restart records since the checkpoint are written again.
 */
export type KinesisSink<T> = TwoPhaseCommitSink<T, never>;

interface CompiledSinkOptions<T> {
  readonly stream: string;
  readonly partitionKey: (value: T) => string;
  readonly serialize: (value: T) => Uint8Array;
  readonly explicitHashKey: ((value: T) => string | undefined) | undefined;
  readonly maxBatchRecords: number;
  readonly maxBatchBytes: number;
  readonly maxInFlight: number;
  readonly lingerMs: number;
  readonly retry: RetryPolicy;
}

const utf8 = new TextEncoder();

function compile<T>(options: KinesisSinkOptions<T>): CompiledSinkOptions<T> {
  if (typeof options.stream !== 'string' || options.stream.length === 0) {
    throw new ConfigError('kinesis sink: `stream` (a stream name or ARN) is required');
  }
  if (typeof options.partitionKey !== 'function') {
    throw new ConfigError('kinesis sink: `partitionKey` (value => string) is required');
  }
  const int = (name: string, v: number | undefined, fallback: number, min: number, max: number): number => {
    if (v === undefined) return fallback;
    if (!Number.isSafeInteger(v) || v < min || v > max) throw new ConfigError(`kinesis sink: ${name} must be an integer in ${min}..${max}, got ${v}`);
    return v;
  };
  const serializer = options.serializer;
  return {
    stream: options.stream,
    partitionKey: options.partitionKey,
    serialize:
      serializer === undefined
        ? (v: T) => utf8.encode(JSON.stringify(v))
        : (v: T) => {
            const out = serializer(v);
            return typeof out === 'string' ? utf8.encode(out) : out;
          },
    explicitHashKey: options.explicitHashKey,
    maxBatchRecords: int('maxBatchRecords', options.maxBatchRecords, PUT_RECORDS_MAX_ENTRIES, 1, PUT_RECORDS_MAX_ENTRIES),
    maxBatchBytes: int('maxBatchBytes', options.maxBatchBytes, PUT_RECORDS_MAX_BYTES, MAX_RECORD_BYTES, PUT_RECORDS_MAX_BYTES),
    maxInFlight: int('maxInFlightRequests', options.maxInFlightRequests, 4, 1, 1000),
    lingerMs: int('lingerMs', options.lingerMs, 100, 0, 3_600_000),
    retry: compileRetry('kinesis sink', options.retry),
  };
}

/** Writes records to a Kinesis stream with PutRecords (see `KinesisSink`). */
export function kinesisSink<T>(options: KinesisSinkOptions<T>): KinesisSink<T> {
  const opts = compile(options);
  const name = options.name ?? `kinesis:${opts.stream}`;
  return {
    name,
    twoPhaseCommit: true,
    createWriter: (ctx: SinkContext) => new KinesisSinkWriter(opts, options, ctx),
    createCommitter: () => ({ commit() {} }),
    cleanUpDangling() {},
  };
}

/** Counters of one sink writer. */
export interface KinesisSinkCounters {
  recordsWritten: number;
  putRecordsCalls: number;
}

export class KinesisSinkWriter<T> implements TwoPhaseCommitSinkWriter<T, never> {
  readonly counters: KinesisSinkCounters = { recordsWritten: 0, putRecordsCalls: 0 };
  private entries: PutRecordsRequestEntry[] = [];
  private bytes = 0;
  private readonly inflight = new Set<Promise<void>>();
  private failure: unknown;
  private timer: NodeJS.Timeout | undefined;
  private lease: KinesisApiLease | undefined;
  private readonly controller = new AbortController();

  constructor(
    private readonly opts: CompiledSinkOptions<T>,
    private readonly clientOptions: KinesisClientOptions,
    private readonly ctx: SinkContext,
  ) {}

  write(batch: RecordBatch<T>): void | Promise<void> {
    this.throwIfFailed();
    const { values } = batch;
    const n = values.length;
    // Serialized up front, so that a record Kinesis would refuse fails the write before any of the batch is sent.
    const entries = new Array<PutRecordsRequestEntry>(n);
    const sizes = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const entry = this.entryOf(values[i] as T, batch, i);
      entries[i] = entry;
      sizes[i] = entrySize(entry);
    }
    return this.append(entries, sizes, 0);
  }

  /** Buffers entries from `from` on; waits whenever a full call would exceed the in-flight limit. */
  private append(entries: PutRecordsRequestEntry[], sizes: number[], from: number): void | Promise<void> {
    const { maxBatchRecords, maxBatchBytes, maxInFlight } = this.opts;
    for (let i = from; i < entries.length; i++) {
      const size = sizes[i] as number;
      if (this.entries.length >= maxBatchRecords || this.bytes + size > maxBatchBytes) {
        if (this.inflight.size >= maxInFlight) return this.drainTo(maxInFlight - 1).then(() => this.append(entries, sizes, i));
        this.dispatch();
      }
      this.entries.push(entries[i] as PutRecordsRequestEntry);
      this.bytes += size;
    }
    if (this.entries.length >= maxBatchRecords && this.inflight.size < maxInFlight) this.dispatch();
    this.armLinger();
  }

  /** Every record written so far is acknowledged when this returns. */
  async prepareCommit(): Promise<never[]> {
    await this.flush();
    return [];
  }

  finish(): Promise<void> {
    return this.flush();
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.controller.abort();
    this.lease?.release();
    this.lease = undefined;
  }

  private async flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.entries.length > 0) {
      await this.drainTo(this.opts.maxInFlight - 1);
      this.dispatch();
    }
    await this.drainTo(0);
  }

  private async drainTo(limit: number): Promise<void> {
    while (this.inflight.size > limit) await Promise.race(this.inflight);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private entryOf(value: T, batch: RecordBatch<T>, index: number): PutRecordsRequestEntry {
    let key: string;
    let data: Uint8Array;
    let hashKey: string | undefined;
    try {
      key = this.opts.partitionKey(value);
      data = this.opts.serialize(value);
      hashKey = this.opts.explicitHashKey?.(value);
    } catch (error) {
      throw new KinesisSinkError(`${this.where(batch, index)}: serializing the record failed: ${errorMessage(error)}`, 1, undefined, { cause: error });
    }
    if (typeof key !== 'string' || key.length === 0 || key.length > 256) {
      throw new KinesisSinkError(
        `${this.where(batch, index)}: partitionKey returned ${JSON.stringify(key)}; Kinesis needs a string of 1 to 256 characters`,
        1,
        undefined,
      );
    }
    const entry: PutRecordsRequestEntry = { Data: data, PartitionKey: key };
    if (hashKey !== undefined) entry.ExplicitHashKey = hashKey;
    const size = entrySize(entry);
    if (size > MAX_RECORD_BYTES) {
      throw new KinesisSinkError(
        `${this.where(batch, index)}: a record of ${size} bytes (data plus partition key "${key}") exceeds Kinesis's limit of 1 MiB per record`,
        1,
        'RecordTooLarge',
      );
    }
    return entry;
  }

  private where(batch: RecordBatch<T>, index: number): string {
    const offset = batch.offsets?.[index];
    const origin = batch.split === undefined || offset === undefined ? '' : ` (record from split ${batch.split} offset ${offset})`;
    return `kinesis sink "${this.ctx.operatorName}" (subtask ${this.ctx.subtask}) to "${this.opts.stream}"${origin}`;
  }

  private dispatch(): void {
    if (this.entries.length === 0) return;
    const entries = this.entries;
    this.entries = [];
    this.bytes = 0;
    this.lease ??= acquireKinesisApi(this.clientOptions);
    const api = this.lease.api;
    this.counters.putRecordsCalls++;
    const call = putRecordsWithRetry(api, this.opts.stream, entries, this.opts.retry, this.controller.signal)
      .then(
        () => {
          this.counters.recordsWritten += entries.length;
        },
        (error: unknown) => {
          this.failure ??= error;
        },
      )
      .finally(() => this.inflight.delete(call));
    this.inflight.add(call);
  }

  private armLinger(): void {
    if (this.entries.length === 0 || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.inflight.size < this.opts.maxInFlight) this.dispatch();
      else this.armLinger();
    }, this.opts.lingerMs);
    this.timer.unref();
  }
}
