import type { TaskId } from '../../checkpoint/types.ts';
import type { WorkerId } from '../placement.ts';
import type { ChannelReceiver, ChannelSender } from './channel.ts';

/** One channel of the job: from a producer subtask to a consumer subtask on one edge, with where each end runs. */
export interface ChannelSpec {
  /** Names the channel the same way on every worker (see channelKey). */
  readonly key: string;
  readonly producer: TaskId;
  readonly consumer: TaskId;
  readonly producerWorker: WorkerId;
  readonly consumerWorker: WorkerId;
}

/**
 * Makes the ends of channels for the tasks of one worker. A deployment chooses the kind: within a worker an
 * in-memory queue, between worker threads a MessagePort, between processes a network or stream channel. Each
 * end is asked for once, on the worker it runs on (the sender where the producer runs, the receiver where the
 * consumer runs); both ends of a channel within one worker are asked of the same factory.
 */
export interface ChannelFactory {
  sender(channel: ChannelSpec): ChannelSender;
  receiver(channel: ChannelSpec): ChannelReceiver;
  /**
   * Stops every channel within this worker from delivering (the job is cancelled), so that a producer waiting for
   * capacity is released. Receivers of channels from other workers are closed by their tasks.
   */
  close(): void;
}
