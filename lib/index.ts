// Public API of Sluice: re-exports only.
export {
  OutputTag,
  ConfigError,
  SluiceError,
  UserFunctionError,
  JobFailedError,
  DEFAULT_MAX_PARALLELISM,
  MAX_WATERMARK,
  MIN_WATERMARK,
  keyGroupOf,
  kinesisKeyGroupOf,
  systemClock,
  ManualClock,
  InvalidTimestampError,
  NonFiniteNumberError,
  MIN_TIMESTAMP,
  MAX_TIMESTAMP,
  isValidTimestamp,
  invalidTimestampReason,
} from './core/index.ts';
export type { Key, KeyGroupHash, RecordBatch, RecordOrigin, Clock } from './core/index.ts';

export { StreamEnvironment } from './api/environment.ts';
export { DataStream, KeyedStream, WindowedStream, ConnectedStreams, KeyedConnectedStreams, DataStreamSink } from './api/streams.ts';
export type { KeyByOptions } from './api/streams.ts';
export { JoinedStreams, JoinWhere, JoinEqualTo, WindowJoin, IntervalJoin, IntervalJoined, RegularJoin } from './api/joins.ts';
export type {
  JoinFunction,
  ProcessJoinFunction,
  ProcessJoinContext,
  ProcessWindowJoinFunction,
  RetentionTimeDomain,
} from './contracts/join-functions.ts';
export {
  WatermarkStrategy,
  DEFAULT_MAX_ALLOWED_DRIFT_MS,
  DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS,
} from './contracts/watermark-strategy.ts';
export type { WatermarkGenerator, TimestampAssigner, WatermarkAlignment } from './contracts/watermark-strategy.ts';
export { defineJob } from './api/job.ts';
export type { JobDefinition, FlagSpec, FlagSpecs, ParsedFlags } from './api/job.ts';
export type { JobOptions } from './contracts/job-options.ts';
export type * from './contracts/functions.ts';
export type { CollectionSourceOptions } from './connectors/local/collection-source.ts';

export {
  valueState,
  listState,
  mapState,
  reducingState,
  aggregatingState,
} from './state/index.ts';
export type {
  StateTtlConfig,
  ValueState,
  ListState,
  MapState,
  ReducingState,
  AggregatingState,
  AggregateFunction,
  ReduceFunction,
} from './state/index.ts';

export {
  TumblingEventTimeWindows,
  SlidingEventTimeWindows,
  EventTimeSessionWindows,
  TumblingProcessingTimeWindows,
  SlidingProcessingTimeWindows,
  ProcessingTimeSessionWindows,
} from './operators/windows/assigners.ts';
export type { WindowAssigner } from './operators/windows/assigners.ts';

export type { Source, SourceReader, SourceSplit, PollResult } from './connectors/source.ts';
export type { Sink, SinkWriter, SinkContext } from './connectors/sink.ts';
export * from './connectors/local/index.ts';

export { runInThisThread } from './runtime/in-thread-runner.ts';
export type { InThreadRunOptions } from './runtime/in-thread-runner.ts';
export { runOnThreads } from './runtime/threads/thread-runner.ts';
export type { ThreadedRunOptions } from './runtime/threads/thread-runner.ts';
export type { JobResult } from './runtime/job-result.ts';
