import { MessageChannel } from 'node:worker_threads';
import { ThreadChannelFactory } from '../../lib/runtime/channels/thread-channel-factory.ts';
import type { ChannelSpec } from '../../lib/runtime/channels/channel-factory.ts';
import { runChannelContract } from './channel.contract.ts';

const spec = (producerWorker: number, consumerWorker: number): ChannelSpec => ({
  key: '0:0:0',
  producer: { vertex: 0, subtask: 0 },
  consumer: { vertex: 1, subtask: 0 },
  producerWorker,
  consumerWorker,
});

// Both ends on one worker: the factory gives the in-memory queue.
runChannelContract('in-thread queue', (capacity) => {
  const factory = new ThreadChannelFactory(0, new Map(), capacity);
  // The queue lives in the consumer's thread too: nothing to end on the producer's side.
  return { sender: factory.sender(spec(0, 0)), receiver: factory.receiver(spec(0, 0)), endProducer: () => {}, dispose: () => factory.close() };
});

// Ends on two workers: each worker's factory gets its end of one MessageChannel, as the coordinating thread deals them.
runChannelContract('MessagePort between threads', (capacity) => {
  const { port1, port2 } = new MessageChannel();
  const producerSide = new ThreadChannelFactory(0, new Map([['0:0:0', port1]]), capacity);
  const consumerSide = new ThreadChannelFactory(1, new Map([['0:0:0', port2]]), capacity);
  return {
    sender: producerSide.sender(spec(0, 1)),
    receiver: consumerSide.receiver(spec(0, 1)),
    endProducer: () => port1.close(),
    dispose: () => {
      port1.close();
      port2.close();
    },
  };
});
