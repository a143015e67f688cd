import type { PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { ExchangeError, ProducerSequencer, type ExchangeBatch, type ExchangeSender, type ExchangeSenderSnapshot } from '../../../../cluster/exchange/index.ts';
import { ConfigError } from '../../../../core/index.ts';
import { compileRetry, type RetryOptions, type RetryPolicy } from '../../kinesis/backoff.ts';
import { acquireKinesisApi, type KinesisApiLease, type KinesisClientOptions } from '../../kinesis/kinesis-api.ts';
import { chunkEntries, putRecordsWithRetry } from '../../kinesis/put-records.ts';
import { listExchangeShards, type ExchangeShard } from './exchange-shards.ts';

export interface KinesisExchangeProducerOptions extends KinesisClientOptions {
  /** The internal exchange stream (name or ARN), of exactly `parallelism` open shards. */
  readonly stream: string;
  readonly parallelism: number;
  /** The producing slot. */
  readonly slot: number;
  /** The slot's fencing epoch (its lease epoch). */
  readonly epoch: number;
  /** Records queued and not yet acknowledged by the stream, over all targets, before `send` holds back. @default 20000 */
  readonly maxPendingRecords?: number;
  /** @default 256 KiB */
  readonly maxFrameBytes?: number;
  /** Retries of throttled and failed PutRecords entries (a retried entry keeps its frame and seq). */
  readonly retry?: RetryOptions;
}

interface EdgeState {
  readonly seq: ProducerSequencer;
}

type Item =
  | { readonly kind: 'records'; readonly edge: EdgeState; values: unknown[]; timestamps: number[] }
  /** `records`: how many queued records this frame (the last of their run) settles when acknowledged. */
  | { readonly kind: 'frame'; readonly bytes: Uint8Array; readonly acked?: () => void; records?: number };

interface ShardQueue {
  readonly shard: ExchangeShard;
  items: Item[];
  running: boolean;
}

/**
 * The exchange writer of one slot: one queue per target shard with exactly one PutRecords in flight each, records
 * framed when a request is built (so a busy shard gets large frames), ExplicitHashKey pinning every record to its
 * target's shard. Shared by the slot's senders (one per outgoing exchange edge).
 */
export class KinesisExchangeProducer {
  private readonly options: KinesisExchangeProducerOptions;
  private readonly lease: KinesisApiLease;
  private readonly queues: ShardQueue[];
  private readonly policy: RetryPolicy;
  private readonly maxPending: number;
  private readonly edges = new Map<string, EdgeState>();
  private pendingRecords = 0;
  private failure: ExchangeError | undefined;
  private closed = false;
  private roomWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private readonly abort = new AbortController();

  private constructor(options: KinesisExchangeProducerOptions, lease: KinesisApiLease, shards: readonly ExchangeShard[]) {
    this.options = options;
    this.lease = lease;
    this.queues = shards.map((shard) => ({ shard, items: [], running: false }));
    this.policy = compileRetry(`exchange producer of slot ${options.slot}`, options.retry);
    this.maxPending = options.maxPendingRecords ?? 20_000;
  }

  /** Checks that the stream has exactly P open shards (ConfigError otherwise) and opens the producer. */
  static async open(options: KinesisExchangeProducerOptions): Promise<KinesisExchangeProducer> {
    const { parallelism, slot, epoch } = options;
    if (!Number.isInteger(parallelism) || parallelism < 1) throw new ConfigError(`exchange producer: parallelism must be a positive integer, got ${parallelism}`);
    if (!Number.isInteger(slot) || slot < 0 || slot >= parallelism) throw new ConfigError(`exchange producer: slot must be in 0..${parallelism - 1}, got ${slot}`);
    if (!Number.isSafeInteger(epoch) || epoch < 0) throw new ConfigError(`exchange producer: epoch must be an integer >= 0, got ${epoch}`);
    if (options.maxPendingRecords !== undefined && !(options.maxPendingRecords >= 1)) {
      throw new ConfigError(`exchange producer: maxPendingRecords must be >= 1, got ${options.maxPendingRecords}`);
    }
    const lease = acquireKinesisApi(options);
    try {
      const shards = await listExchangeShards(lease.api, options.stream, parallelism);
      return new KinesisExchangeProducer(options, lease, shards);
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  /**
   * The sender of one outgoing exchange edge. `restoredFrom` is the sender state in the checkpoint the slot restored
   * (absent on a fresh start). Its start frame is queued to every shard at once.
   */
  sender(edge: string, restoredFrom?: ExchangeSenderSnapshot): ExchangeSender {
    if (this.edges.has(edge)) throw new ExchangeError(`exchange producer of slot ${this.options.slot}: edge ${edge} has a sender already`);
    const state: EdgeState = {
      seq: new ProducerSequencer({
        edge,
        producer: this.options.slot,
        epoch: this.options.epoch,
        restoredFrom,
        ...(this.options.maxFrameBytes === undefined ? {} : { maxFrameBytes: this.options.maxFrameBytes }),
      }),
    };
    this.edges.set(edge, state);
    const start = state.seq.startFrame();
    for (const queue of this.queues) this.enqueue(queue, { kind: 'frame', bytes: start });
    return {
      edge,
      send: (batch) => this.send(state, batch),
      onBarrier: (checkpointId) => this.onBarrier(state, checkpointId),
      close: () => this.close(),
    };
  }

  /** Stops: requests in flight are cancelled, queued records dropped. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.fail(new ExchangeError(`exchange producer of slot ${this.options.slot} is closed`));
    this.lease.release();
  }

  private send(edge: EdgeState, batch: ExchangeBatch): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const { values, timestamps, targets } = batch;
    if (values.length !== timestamps.length || values.length !== targets.length) {
      return Promise.reject(new ExchangeError(`edge ${edge.seq.edge}: a batch of ${values.length} values, ${timestamps.length} timestamps and ${targets.length} targets`));
    }
    const P = this.queues.length;
    const byTarget = new Map<number, { values: unknown[]; timestamps: number[] }>();
    for (let i = 0; i < values.length; i++) {
      const target = targets[i] as number;
      if (!Number.isInteger(target) || target < 0 || target >= P) {
        return Promise.reject(new ExchangeError(`edge ${edge.seq.edge}: record ${i} targets slot ${target}, outside 0..${P - 1}`));
      }
      let group = byTarget.get(target);
      if (group === undefined) byTarget.set(target, (group = { values: [], timestamps: [] }));
      group.values.push(values[i]);
      group.timestamps.push(timestamps[i] as number);
    }
    for (const [target, group] of byTarget) {
      const queue = this.queues[target] as ShardQueue;
      const last = queue.items[queue.items.length - 1];
      // Appending to the last queued run of the same edge keeps one frame per edge per request.
      if (last?.kind === 'records' && last.edge === edge) {
        last.values.push(...group.values);
        last.timestamps.push(...group.timestamps);
        this.pendingRecords += group.values.length;
        this.pump(queue);
      } else {
        this.pendingRecords += group.values.length;
        this.enqueue(queue, { kind: 'records', edge, values: group.values, timestamps: group.timestamps });
      }
    }
    if (this.pendingRecords <= this.maxPending) return Promise.resolve();
    return new Promise((resolve, reject) => this.roomWaiters.push({ resolve, reject }));
  }

  private async onBarrier(edge: EdgeState, checkpointId: number): Promise<ExchangeSenderSnapshot> {
    if (this.failure !== undefined) throw this.failure;
    // Number every queued record of this edge now, so the marker's sentThrough covers exactly what precedes it.
    for (const queue of this.queues) queue.items = queue.items.flatMap((item) => (item.kind === 'records' && item.edge === edge ? this.frame(item) : [item]));
    const marker = edge.seq.markerFrame(checkpointId);
    const snapshot = edge.seq.snapshot(checkpointId);
    const markers = this.queues.map((queue) => new Promise<void>((resolve) => this.enqueue(queue, { kind: 'frame', bytes: marker, acked: resolve })));
    await Promise.race([Promise.all(markers), this.failed()]);
    return snapshot;
  }

  /** Never resolves; rejects once the producer failed, so that a barrier waiting for markers ends too. */
  private failedPromise: Promise<void> | undefined;
  private failedReject: ((e: unknown) => void) | undefined;
  private failed(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    this.failedPromise ??= new Promise<void>((_, reject) => {
      this.failedReject = reject;
    });
    return this.failedPromise;
  }

  private frame(item: Item & { kind: 'records' }): Item[] {
    const frames = item.edge.seq.dataFrames(item.values, item.timestamps);
    const out: (Item & { kind: 'frame' })[] = frames.map((f) => ({ kind: 'frame', bytes: f.bytes }));
    // The records stay counted as pending until their request is acknowledged.
    const last = out[out.length - 1];
    if (last !== undefined) last.records = item.values.length;
    return out;
  }

  private enqueue(queue: ShardQueue, item: Item): void {
    queue.items.push(item);
    this.pump(queue);
  }

  private pump(queue: ShardQueue): void {
    if (queue.running || this.failure !== undefined) return;
    queue.running = true;
    void this.drain(queue).finally(() => {
      queue.running = false;
      if (queue.items.length > 0 && this.failure === undefined) this.pump(queue);
    });
  }

  private async drain(queue: ShardQueue): Promise<void> {
    const partitionKey = `x${this.options.slot}`;
    while (queue.items.length > 0 && this.failure === undefined) {
      const taken = queue.items.flatMap((item) => (item.kind === 'records' ? this.frame(item) : [item]));
      queue.items = [];
      const entries: PutRecordsRequestEntry[] = taken.map((item) => ({
        Data: item.kind === 'frame' ? item.bytes : new Uint8Array(),
        PartitionKey: partitionKey,
        ExplicitHashKey: queue.shard.startingHashKey,
      }));
      try {
        for (const chunk of chunkEntries(entries)) await putRecordsWithRetry(this.lease.api, this.options.stream, chunk, this.policy, this.abort.signal);
      } catch (cause) {
        this.fail(new ExchangeError(`exchange producer of slot ${this.options.slot}: writing to shard ${queue.shard.shardId} of "${this.options.stream}" failed: ${String(cause)}`, { cause, retriable: true }));
        return;
      }
      for (const item of taken) {
        if (item.kind !== 'frame') continue;
        if (item.records !== undefined) this.pendingRecords -= item.records;
        item.acked?.();
      }
      if (this.pendingRecords <= this.maxPending) for (const waiter of this.roomWaiters.splice(0)) waiter.resolve();
    }
  }

  private fail(error: ExchangeError): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    for (const waiter of this.roomWaiters.splice(0)) waiter.reject(error);
    this.failedReject?.(error);
    this.failedPromise?.catch(() => {});
  }
}
