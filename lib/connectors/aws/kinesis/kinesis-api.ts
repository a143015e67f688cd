import {
  DescribeStreamConsumerCommand,
  DescribeStreamSummaryCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
  PutRecordsCommand,
  RegisterStreamConsumerCommand,
  SubscribeToShardCommand,
} from '@aws-sdk/client-kinesis';
import type {
  DescribeStreamConsumerInput,
  DescribeStreamConsumerOutput,
  DescribeStreamSummaryInput,
  DescribeStreamSummaryOutput,
  GetRecordsInput,
  GetRecordsOutput,
  GetShardIteratorInput,
  GetShardIteratorOutput,
  ListShardsInput,
  ListShardsOutput,
  PutRecordsInput,
  PutRecordsOutput,
  RegisterStreamConsumerInput,
  RegisterStreamConsumerOutput,
  SubscribeToShardInput,
  SubscribeToShardOutput,
} from '@aws-sdk/client-kinesis';
import { awsClientConfig, type AwsClientOverrides } from '../client-config.ts';

/**
 * The Kinesis calls the connectors make, one method per API call. The SDK client is behind `kinesisApi`; tests
 * wrap it (throttling, expired iterators) or replace it (enhanced fan-out, which kinesalite lacks).
 * Outputs leave out the SDK's `$metadata`, so fakes need not invent it.
 */
export interface KinesisApi {
  listShards(input: ListShardsInput, signal?: AbortSignal): Promise<ListShardsOutput>;
  describeStreamSummary(input: DescribeStreamSummaryInput, signal?: AbortSignal): Promise<DescribeStreamSummaryOutput>;
  getShardIterator(input: GetShardIteratorInput, signal?: AbortSignal): Promise<GetShardIteratorOutput>;
  getRecords(input: GetRecordsInput, signal?: AbortSignal): Promise<GetRecordsOutput>;
  putRecords(input: PutRecordsInput, signal?: AbortSignal): Promise<PutRecordsOutput>;
  registerStreamConsumer(input: RegisterStreamConsumerInput, signal?: AbortSignal): Promise<RegisterStreamConsumerOutput>;
  describeStreamConsumer(input: DescribeStreamConsumerInput, signal?: AbortSignal): Promise<DescribeStreamConsumerOutput>;
  subscribeToShard(input: SubscribeToShardInput, signal?: AbortSignal): Promise<SubscribeToShardOutput>;
  /** Releases connections; only for clients the connector created itself. */
  destroy?(): void;
}

/** Adapts an SDK client. `destroy` destroys the client. */
export function kinesisApi(client: KinesisClient): KinesisApi {
  const opts = (signal: AbortSignal | undefined) => (signal === undefined ? {} : { abortSignal: signal });
  return {
    listShards: (input, signal) => client.send(new ListShardsCommand(input), opts(signal)),
    describeStreamSummary: (input, signal) => client.send(new DescribeStreamSummaryCommand(input), opts(signal)),
    getShardIterator: (input, signal) => client.send(new GetShardIteratorCommand(input), opts(signal)),
    getRecords: (input, signal) => client.send(new GetRecordsCommand(input), opts(signal)),
    putRecords: (input, signal) => client.send(new PutRecordsCommand(input), opts(signal)),
    registerStreamConsumer: (input, signal) => client.send(new RegisterStreamConsumerCommand(input), opts(signal)),
    describeStreamConsumer: (input, signal) => client.send(new DescribeStreamConsumerCommand(input), opts(signal)),
    subscribeToShard: (input, signal) => client.send(new SubscribeToShardCommand(input), opts(signal)),
    destroy: () => client.destroy(),
  };
}

/** How a connector gets its Kinesis client: its own factory, or an SDK client built from `awsClientConfig`. */
export interface KinesisClientOptions {
  /**
   * Returns the client to use (called once per reader / writer and for split discovery). The connector does not
   * destroy clients it got this way. @default an SDK client from `clientConfig`
   */
  readonly client?: () => KinesisApi;
  /** Overrides for the SDK client the connector creates (region, endpoint, credentials...). @default none */
  readonly clientConfig?: AwsClientOverrides;
}

/** A client and how to let go of it. */
export interface KinesisApiLease {
  readonly api: KinesisApi;
  release(): void;
}

export function acquireKinesisApi(options: KinesisClientOptions): KinesisApiLease {
  if (options.client !== undefined) return { api: options.client(), release: () => {} };
  const api = kinesisApi(new KinesisClient(awsClientConfig('kinesis', options.clientConfig)));
  return { api, release: () => api.destroy?.() };
}

/** `StreamName` or `StreamARN`, whichever `stream` is. */
export function streamRef(stream: string): { StreamName: string } | { StreamARN: string } {
  return stream.startsWith('arn:') ? { StreamARN: stream } : { StreamName: stream };
}
