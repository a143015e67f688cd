export { ExchangeError } from './exchange-error.ts';
export type {
  CompletedCheckpoint,
  ExchangeBatch,
  ExchangeProducerPort,
  ExchangeReceiverInput,
  ExchangeReceiverSnapshot,
  ExchangeSender,
  ExchangeSenderSnapshot,
  ExchangeShardSnapshot,
  ExchangeTransport,
  ProducerProgress,
  ReleasedBatch,
  ResumePosition,
} from './exchange-ports.ts';
export { decodeFrame, encodeDataFrames, encodeFrame, MAX_FRAME_BYTES } from './exchange-frames.ts';
export type { DataFrame, EncodedDataFrame, ExchangeFrame, MarkerFrame, StartFrame } from './exchange-frames.ts';
export { ProducerSequencer } from './producer-sequencer.ts';
export { comparePositions, DEFAULT_MAX_BUFFERED_BYTES, ShardReceiver, type ShardReceiverOptions } from './shard-receiver.ts';
