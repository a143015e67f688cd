import type { ShardIteratorType } from '@aws-sdk/client-kinesis';
import {
  ExchangeError,
  ShardReceiver,
  type CompletedCheckpoint,
  type ExchangeReceiverInput,
  type ExchangeReceiverSnapshot,
  type ReleasedBatch,
} from '../../../../cluster/exchange/index.ts';
import { ConfigError } from '../../../../core/index.ts';
import { backoffDelay, compileRetry, sleep, type RetryOptions } from '../../kinesis/backoff.ts';
import { awsErrorName, isThrottling, isTransient } from '../../kinesis/errors.ts';
import { acquireKinesisApi, streamRef, type KinesisApiLease, type KinesisClientOptions } from '../../kinesis/kinesis-api.ts';
import { listExchangeShards } from './exchange-shards.ts';

export interface KinesisExchangeReceiverOptions extends KinesisClientOptions {
  readonly stream: string;
  readonly parallelism: number;
  /** The consuming slot: it reads shard `slot` (in hash-key order). */
  readonly slot: number;
  /** The receiver state of the checkpoint the slot restored; absent on a fresh start (read from the trim horizon). */
  readonly restoredFrom?: ExchangeReceiverSnapshot;
  /** @default 64 MiB (see ShardReceiverOptions) */
  readonly maxBufferedBytes?: number;
  /** Wait after a GetRecords that returned nothing. @default 200 */
  readonly idlePollMs?: number;
  /** Records per GetRecords. @default 1000 */
  readonly maxRecordsPerCall?: number;
  readonly retry?: RetryOptions;
}

/**
 * Reads one slot's shard of the exchange stream with GetRecords into a ShardReceiver (the read-committed rules),
 * from the restored position, in the background; the consuming task polls released records.
 */
export class KinesisExchangeReceiver implements ExchangeReceiverInput {
  private readonly options: KinesisExchangeReceiverOptions;
  private readonly lease: KinesisApiLease;
  private readonly machine: ShardReceiver;
  private readonly abort = new AbortController();
  private failure: unknown;
  private readyWaiters: (() => void)[] = [];
  private wakeReader: (() => void) | undefined;
  private readonly loop: Promise<void>;

  private constructor(options: KinesisExchangeReceiverOptions, lease: KinesisApiLease, shardId: string) {
    this.options = options;
    this.lease = lease;
    const shard = options.restoredFrom?.shards.find((s) => s.shardId === shardId);
    if (options.restoredFrom !== undefined && shard === undefined && options.restoredFrom.shards.length > 0) {
      throw new ExchangeError(
        `exchange receiver of slot ${options.slot}: the checkpoint has state of shard(s) ${options.restoredFrom.shards.map((s) => s.shardId).join(', ')}, not of ${shardId}; was the exchange stream re-created or resharded?`,
      );
    }
    this.machine = new ShardReceiver(shardId, options.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: options.maxBufferedBytes }, shard);
    this.loop = this.read().catch((error: unknown) => {
      if (!this.abort.signal.aborted) this.failure = error;
      this.notifyReady();
    });
  }

  /** Checks that the stream has exactly P open shards (ConfigError otherwise) and starts reading shard `slot`. */
  static async open(options: KinesisExchangeReceiverOptions): Promise<KinesisExchangeReceiver> {
    const { parallelism, slot } = options;
    if (!Number.isInteger(slot) || slot < 0 || slot >= parallelism) throw new ConfigError(`exchange receiver: slot must be in 0..${parallelism - 1}, got ${slot}`);
    const lease = acquireKinesisApi(options);
    try {
      const shards = await listExchangeShards(lease.api, options.stream, parallelism);
      return new KinesisExchangeReceiver(options, lease, (shards[slot] as { shardId: string }).shardId);
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  poll(maxBatches?: number): ReleasedBatch[] {
    if (this.failure !== undefined) throw this.failure;
    const out = this.machine.take(maxBatches);
    if (out.length > 0) this.wake();
    return out;
  }

  whenReady(signal?: AbortSignal): Promise<void> {
    if (this.machine.hasReleased || this.failure !== undefined || signal?.aborted === true) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.readyWaiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  checkpointCompleted(completion: CompletedCheckpoint): void {
    this.machine.checkpointCompleted(completion);
    this.notifyReady();
    this.wake();
  }

  snapshot(): ExchangeReceiverSnapshot {
    return { shards: [this.machine.snapshot()] };
  }

  /** Frames dropped as duplicates or superseded (a figure for metrics and tests). */
  get droppedFrames(): number {
    return this.machine.dropped;
  }

  async close(): Promise<void> {
    if (this.abort.signal.aborted) return;
    this.abort.abort();
    this.wake();
    await this.loop;
    this.lease.release();
    this.notifyReady();
  }

  private notifyReady(): void {
    if (!this.machine.hasReleased && this.failure === undefined && !this.abort.signal.aborted) return;
    for (const waiter of this.readyWaiters.splice(0)) waiter();
  }

  private wake(): void {
    const wake = this.wakeReader;
    this.wakeReader = undefined;
    wake?.();
  }

  /** Sleeps `ms`, or less when woken (a completion, a poll, close). */
  private nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeReader = undefined;
        resolve();
      }, ms);
      this.wakeReader = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async read(): Promise<void> {
    const { api } = this.lease;
    const signal = this.abort.signal;
    const stream = this.options.stream;
    const shardId = this.machine.shardId;
    const policy = compileRetry(`exchange receiver of slot ${this.options.slot}`, this.options.retry);
    const idleMs = this.options.idlePollMs ?? 200;
    const limit = this.options.maxRecordsPerCall ?? 1000;
    let iterator: string | undefined;
    let lastAccepted: string | undefined;
    let failures = 0;
    const iteratorFrom = async (at: { at: string } | { after: string } | undefined): Promise<string | undefined> => {
      const type: ShardIteratorType = at === undefined ? 'TRIM_HORIZON' : 'at' in at ? 'AT_SEQUENCE_NUMBER' : 'AFTER_SEQUENCE_NUMBER';
      const sequence = at === undefined ? undefined : 'at' in at ? at.at : at.after;
      const out = await api.getShardIterator({ ...streamRef(stream), ShardId: shardId, ShardIteratorType: type, ...(sequence === undefined ? {} : { StartingSequenceNumber: sequence }) }, signal);
      return out.ShardIterator;
    };
    let from = this.machine.startPosition;
    let caughtUp = false;
    while (!signal.aborted) {
      try {
        const rewind = this.machine.rewindPosition(caughtUp);
        if (rewind !== undefined) {
          this.machine.rewind();
          from = { at: rewind };
          iterator = undefined;
        }
        if (this.machine.paused) {
          await this.nap(idleMs);
          continue;
        }
        iterator ??= await iteratorFrom(from);
        if (iterator === undefined) throw new ExchangeError(`exchange shard ${shardId} of "${stream}" has no iterator: the stream was resharded; it must keep exactly P shards`);
        const out = await api.getRecords({ ShardIterator: iterator, Limit: limit }, signal);
        failures = 0;
        caughtUp = (out.Records ?? []).length === 0;
        let stoppedEarly = false;
        for (const record of out.Records ?? []) {
          if (record.Data === undefined || record.SequenceNumber === undefined) continue;
          this.machine.accept(record.Data, record.SequenceNumber);
          lastAccepted = record.SequenceNumber;
          if (this.machine.paused || this.machine.rewindPosition() !== undefined) {
            stoppedEarly = true;
            break;
          }
        }
        this.notifyReady();
        if (stoppedEarly) {
          iterator = undefined;
          from = lastAccepted === undefined ? from : { after: lastAccepted };
          continue;
        }
        if (out.NextShardIterator === undefined || out.NextShardIterator === null) {
          throw new ExchangeError(`exchange shard ${shardId} of "${stream}" was closed: the stream was resharded; it must keep exactly P shards`);
        }
        iterator = out.NextShardIterator;
        if (lastAccepted !== undefined) from = { after: lastAccepted };
        if ((out.Records ?? []).length === 0) await this.nap(idleMs);
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ExchangeError) throw error;
        const name = awsErrorName(error);
        if (name === 'ExpiredIteratorException') {
          iterator = undefined;
          continue;
        }
        if (!isTransient(error)) throw new ExchangeError(`exchange receiver of slot ${this.options.slot}: reading shard ${shardId} of "${stream}" failed: ${String(error)}`, { cause: error });
        if (!isThrottling(error) && ++failures >= policy.maxAttempts) {
          throw new ExchangeError(`exchange receiver of slot ${this.options.slot}: reading shard ${shardId} failed ${failures} times in a row: ${String(error)}`, { cause: error, retriable: true });
        }
        iterator = undefined;
        await sleep(backoffDelay(policy, Math.max(1, failures)), signal);
      }
    }
  }
}
