import type { MessagePort } from 'node:worker_threads';
import { InternalError } from '../../core/index.ts';
import type { WorkerId } from '../placement.ts';
import type { ChannelFactory, ChannelSpec } from './channel-factory.ts';
import type { ChannelReceiver, ChannelSender } from './channel.ts';
import { LocalChannel } from './local-channel.ts';
import { PortReceiver, PortSender } from './port-channel.ts';

/**
 * Channels of `sluice run`: a LocalChannel when both ends are on this worker thread, else the MessagePort the
 * coordinating thread made for the channel (one end transferred to each thread).
 */
export class ThreadChannelFactory implements ChannelFactory {
  private readonly local = new Map<string, LocalChannel>();

  /**
   * @param worker the worker thread this factory makes ends for
   * @param ports the MessagePorts of cross-thread channels with an end on this thread, by channel key
   * @param capacity batches in flight on a channel before its producer is stopped
   */
  constructor(
    private readonly worker: WorkerId,
    private readonly ports: ReadonlyMap<string, MessagePort>,
    private readonly capacity: number,
  ) {}

  sender(channel: ChannelSpec): ChannelSender {
    if (channel.producerWorker !== this.worker) throw this.notHere(channel, 'sender');
    // A cross-thread channel's credits come back only when the other thread's event loop turns: allow more in flight.
    return channel.consumerWorker === this.worker ? this.localChannel(channel.key) : new PortSender(this.port(channel.key), 4 * this.capacity);
  }

  receiver(channel: ChannelSpec): ChannelReceiver {
    if (channel.consumerWorker !== this.worker) throw this.notHere(channel, 'receiver');
    return channel.producerWorker === this.worker ? this.localChannel(channel.key) : new PortReceiver(this.port(channel.key));
  }

  close(): void {
    for (const ch of this.local.values()) ch.close();
  }

  private localChannel(key: string): LocalChannel {
    let ch = this.local.get(key);
    if (ch === undefined) {
      ch = new LocalChannel(this.capacity);
      this.local.set(key, ch);
    }
    return ch;
  }

  private port(key: string): MessagePort {
    const p = this.ports.get(key);
    if (p === undefined) throw new InternalError(`no port for channel ${key} on thread ${this.worker}`);
    return p;
  }

  private notHere(channel: ChannelSpec, end: string): InternalError {
    return new InternalError(`the ${end} of channel ${channel.key} does not run on worker ${this.worker}`);
  }
}
