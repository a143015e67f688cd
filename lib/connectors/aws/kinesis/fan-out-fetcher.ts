import type { _Record, SubscribeToShardEventStream } from '@aws-sdk/client-kinesis';
import { awsErrorName, isTransient, KinesisSourceError, SubscribeToShardEventError } from './errors.ts';
import { backoffDelay, sleep, type RetryPolicy } from './backoff.ts';
import { streamRef, type KinesisApi } from './kinesis-api.ts';
import { iteratorPosition, type FetchedRecords, type ShardFetcher, type ShardFetcherFactory } from './shard-fetcher.ts';
import type { ShardPosition } from './shard-split.ts';

/** Kinesis allows one SubscribeToShard call per second per shard and consumer. */
const SUBSCRIBE_INTERVAL_MS = 1000;
/** How often registration looks whether the consumer became ACTIVE. */
const CONSUMER_POLL_MS = 500;

export interface FanOutSettings {
  readonly consumerName: string;
  /** Use this consumer instead of registering `consumerName`. */
  readonly consumerArn?: string | undefined;
}

/**
 * The stream's consumer ARN, registering the consumer if it does not exist yet and waiting until it is ACTIVE.
 * Several readers may call it at once: registration is idempotent (ResourceInUseException means "exists").
 */
export async function ensureStreamConsumer(
  api: KinesisApi,
  stream: string,
  consumerName: string,
  policy: RetryPolicy,
  signal: AbortSignal,
): Promise<string> {
  let streamArn = stream;
  if (!stream.startsWith('arn:')) {
    const summary = await withRetry(() => api.describeStreamSummary({ ...streamRef(stream) }, signal), policy, signal);
    streamArn = summary.StreamDescriptionSummary?.StreamARN ?? '';
    if (streamArn === '') throw new KinesisSourceError(`stream "${stream}" has no ARN in DescribeStreamSummary`, undefined);
  }
  let arn: string | undefined;
  let status: string | undefined;
  try {
    const out = await withRetry(() => api.registerStreamConsumer({ StreamARN: streamArn, ConsumerName: consumerName }, signal), policy, signal);
    arn = out.Consumer?.ConsumerARN;
    status = out.Consumer?.ConsumerStatus;
  } catch (error) {
    if (awsErrorName(error) !== 'ResourceInUseException') throw error;
  }
  for (;;) {
    if (arn !== undefined && status === 'ACTIVE') return arn;
    if (status === 'DELETING') {
      throw new KinesisSourceError(
        `enhanced fan-out consumer "${consumerName}" of stream "${stream}" is being deleted; wait until it is gone or use another consumerName`,
        undefined,
      );
    }
    if (arn !== undefined) await sleep(CONSUMER_POLL_MS, signal);
    if (signal.aborted) throw new KinesisSourceError('cancelled while waiting for the fan-out consumer', undefined);
    const out = await withRetry(() => api.describeStreamConsumer({ StreamARN: streamArn, ConsumerName: consumerName }, signal), policy, signal);
    arn = out.ConsumerDescription?.ConsumerARN;
    status = out.ConsumerDescription?.ConsumerStatus;
  }
}

async function withRetry<R>(call: () => Promise<R>, policy: RetryPolicy, signal: AbortSignal): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isTransient(error) || attempt >= policy.maxAttempts || signal.aborted) throw error;
      await sleep(backoffDelay(policy, attempt), signal);
    }
  }
}

/** Enhanced fan-out readers: one SubscribeToShard subscription (up to 5 minutes) after another per shard. */
export function fanOutFetcherFactory(api: KinesisApi, consumerArn: () => Promise<string>): ShardFetcherFactory {
  return {
    minIntervalMs: 0,
    create: (shardId, start) => new FanOutShardFetcher(api, consumerArn, shardId, start),
  };
}

const NO_RECORDS: readonly _Record[] = [];

/** `promise`, or a rejection as soon as `signal` aborts (a quiet subscription may not answer for seconds). */
function untilAborted<R>(promise: Promise<R>, signal: AbortSignal): Promise<R> {
  const aborted = () => new KinesisSourceError('SubscribeToShard read cancelled', undefined);
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise<R>((resolve, reject) => {
    const onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Reads a shard through SubscribeToShard. Each `next` takes one event of the subscription (the event stream is
 * pulled, so an unread event holds the next back). When a subscription ends (after 5 minutes, or on an error) the
 * next call subscribes again after the last record fetched, at most once a second. The shard ends with an event
 * without ContinuationSequenceNumber (it then lists the child shards).
 */
export class FanOutShardFetcher implements ShardFetcher {
  private events: AsyncIterator<SubscribeToShardEventStream> | undefined;
  private lastSequenceNumber: string | undefined;
  private continuation: string | undefined;
  private lastSubscribeAt = Number.NEGATIVE_INFINITY;
  private ended = false;

  constructor(
    private readonly api: KinesisApi,
    private readonly consumerArn: () => Promise<string>,
    private readonly shardId: string,
    private readonly start: ShardPosition,
  ) {}

  async next(signal: AbortSignal): Promise<FetchedRecords> {
    if (this.ended) return { records: NO_RECORDS, end: true, caughtUp: true };
    if (this.events === undefined) await this.subscribe(signal);
    let step: IteratorResult<SubscribeToShardEventStream>;
    try {
      step = await untilAborted((this.events as AsyncIterator<SubscribeToShardEventStream>).next(), signal);
    } catch (error) {
      this.events = undefined;
      throw error;
    }
    if (step.done === true) {
      // The subscription ran its 5 minutes: the next call subscribes again.
      this.events = undefined;
      return { records: NO_RECORDS, end: false, caughtUp: false };
    }
    const event = step.value;
    if (event.SubscribeToShardEvent !== undefined) {
      const records = event.SubscribeToShardEvent.Records ?? NO_RECORDS;
      const last = records[records.length - 1];
      if (last?.SequenceNumber !== undefined) this.lastSequenceNumber = last.SequenceNumber;
      const continuation = event.SubscribeToShardEvent.ContinuationSequenceNumber;
      if (continuation === undefined || continuation === null) {
        this.ended = true;
        this.stop();
      } else {
        this.continuation = continuation;
      }
      const caughtUp = records.length === 0 && (event.SubscribeToShardEvent.MillisBehindLatest ?? 0) === 0;
      return { records, end: this.ended, caughtUp };
    }
    // An error event ends the subscription; thrown under its exception name, so the reader can classify it.
    this.stop();
    const [name, detail] = Object.entries(event).find(([, v]) => v !== undefined) ?? ['UnknownEvent', undefined];
    const message = (detail as { message?: string } | undefined)?.message ?? name;
    throw new SubscribeToShardEventError(name, message);
  }

  close(): void {
    this.stop();
  }

  private stop(): void {
    const events = this.events;
    this.events = undefined;
    void events?.return?.()?.catch(() => {});
  }

  private async subscribe(signal: AbortSignal): Promise<void> {
    const consumerArn = await this.consumerArn();
    await sleep(this.lastSubscribeAt + SUBSCRIBE_INTERVAL_MS - Date.now(), signal);
    this.lastSubscribeAt = Date.now();
    // After records, continue after the last one; before any, from the last continuation (progress on an empty
    // shard) or the start position.
    const position: ShardPosition =
      this.lastSequenceNumber !== undefined
        ? { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: this.lastSequenceNumber }
        : this.start;
    const starting =
      this.lastSequenceNumber === undefined && this.continuation !== undefined
        ? { Type: 'AT_SEQUENCE_NUMBER' as const, SequenceNumber: this.continuation }
        : iteratorPosition(position);
    const out = await this.api.subscribeToShard(
      { ConsumerARN: consumerArn, ShardId: this.shardId, StartingPosition: starting },
      signal,
    );
    if (out.EventStream === undefined) {
      throw new KinesisSourceError(`SubscribeToShard for ${this.shardId} returned no event stream`, this.shardId, { retriable: true });
    }
    this.events = out.EventStream[Symbol.asyncIterator]();
  }
}
