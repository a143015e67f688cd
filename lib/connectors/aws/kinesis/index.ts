// The Kinesis connector: source, sink, dead-letter stream, and the pieces a deployment may replace.
export { kinesisSource } from './kinesis-source.ts';
export type {
  KinesisSource,
  KinesisSourceOptions,
  KinesisStartPosition,
  KinesisPollingReaderOptions,
  KinesisFanOutReaderOptions,
} from './kinesis-source.ts';
export type { KinesisSourceReader, KinesisReaderCounters } from './kinesis-reader.ts';
export type { KinesisShardSplit, ShardPosition } from './shard-split.ts';
export { ownerOfRoot } from './shard-split.ts';
export { jsonDeserializer } from './record-decoder.ts';
export type { KinesisDeserializer, KinesisRecordInfo } from './record-decoder.ts';
export { kinesisSink, KinesisSinkWriter } from './kinesis-sink.ts';
export type { KinesisSink, KinesisSinkOptions, KinesisSinkCounters } from './kinesis-sink.ts';
export { kinesisDeadLetterWriter } from './kinesis-dead-letter-writer.ts';
export type { KinesisDeadLetterWriterOptions } from './kinesis-dead-letter-writer.ts';
export { broadcastFinishedShardRegistry } from './finished-shard-registry.ts';
export type { FinishedShardRegistry, FinishedShardRegistryContext, FinishedShardRegistryFactory } from './finished-shard-registry.ts';
export { kinesisApi } from './kinesis-api.ts';
export type { KinesisApi, KinesisClientOptions } from './kinesis-api.ts';
export { KinesisSourceError, KinesisSinkError } from './errors.ts';
export type { RetryOptions } from './backoff.ts';
