import type { ExchangeProducerPort, ExchangeReceiverInput, ExchangeReceiverSnapshot, ExchangeTransport } from '../../../../cluster/exchange/index.ts';
import { ConfigError } from '../../../../core/index.ts';
import { acquireKinesisApi, type KinesisClientOptions } from '../../kinesis/kinesis-api.ts';
import { listExchangeShards } from './exchange-shards.ts';
import { KinesisExchangeProducer, type KinesisExchangeProducerOptions } from './kinesis-exchange-sender.ts';
import { KinesisExchangeReceiver, type KinesisExchangeReceiverOptions } from './kinesis-exchange-receiver.ts';

export interface KinesisExchangeTransportOptions extends KinesisClientOptions {
  /** The internal exchange stream (name or ARN): exactly `parallelism` open shards, never resharded. */
  readonly stream: string;
  /** P, the cluster's slots. */
  readonly parallelism: number;
  /** Producer settings besides stream, slot and epoch. @default the producer's defaults */
  readonly producer?: Pick<KinesisExchangeProducerOptions, 'maxPendingRecords' | 'maxFrameBytes' | 'retry'>;
  /** Receiver settings besides stream, slot and restored state. @default the receiver's defaults */
  readonly receiver?: Pick<KinesisExchangeReceiverOptions, 'maxBufferedBytes' | 'idlePollMs' | 'maxRecordsPerCall' | 'retry'>;
}

/** A worker's exchange over one internal Kinesis stream: each slot opens its producer and its shard's receiver. */
export class KinesisExchangeTransport implements ExchangeTransport {
  constructor(private readonly options: KinesisExchangeTransportOptions) {
    if (!Number.isInteger(options.parallelism) || options.parallelism < 1) {
      throw new ConfigError(`exchange stream "${options.stream}": parallelism must be a positive integer, got ${options.parallelism}`);
    }
  }

  /**
   * Checks at start that the stream exists and has exactly P open shards: a ConfigError naming the stream, its shard
   * count and P otherwise (the worker exits 2 instead of failing every slot the same way).
   */
  async check(): Promise<void> {
    const lease = acquireKinesisApi(this.options);
    try {
      await listExchangeShards(lease.api, this.options.stream, this.options.parallelism);
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new ConfigError(`exchange stream "${this.options.stream}" cannot be listed (${error instanceof Error ? error.message : String(error)}): create it with ${this.options.parallelism} shards, or pass another --exchange-stream`, { cause: error });
    } finally {
      lease.release();
    }
  }

  openProducer(slot: number, epoch: number): Promise<ExchangeProducerPort> {
    const { stream, parallelism, client, clientConfig, producer } = this.options;
    return KinesisExchangeProducer.open({ stream, parallelism, slot, epoch, ...clientOf(client, clientConfig), ...producer });
  }

  openReceiver(slot: number, restoredFrom: ExchangeReceiverSnapshot | undefined): Promise<ExchangeReceiverInput> {
    const { stream, parallelism, client, clientConfig, receiver } = this.options;
    return KinesisExchangeReceiver.open({ stream, parallelism, slot, ...(restoredFrom === undefined ? {} : { restoredFrom }), ...clientOf(client, clientConfig), ...receiver });
  }
}

function clientOf(client: KinesisClientOptions['client'], clientConfig: KinesisClientOptions['clientConfig']): KinesisClientOptions {
  return { ...(client === undefined ? {} : { client }), ...(clientConfig === undefined ? {} : { clientConfig }) };
}
