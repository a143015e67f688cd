export { listExchangeShards, type ExchangeShard } from './exchange-shards.ts';
export { KinesisExchangeProducer, type KinesisExchangeProducerOptions } from './kinesis-exchange-sender.ts';
export { KinesisExchangeReceiver, type KinesisExchangeReceiverOptions } from './kinesis-exchange-receiver.ts';
export { KinesisExchangeTransport, type KinesisExchangeTransportOptions } from './kinesis-exchange-transport.ts';
