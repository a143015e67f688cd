import type { StreamElement } from '../../core/index.ts';
import type { ChannelReceiver, ChannelSender } from './channel.ts';

/** A bounded queue between two tasks on the same thread. Elements are passed by reference (batches are immutable). */
export class LocalChannel implements ChannelSender, ChannelReceiver {
  private queue: StreamElement<unknown>[] = [];
  private head = 0;
  private listener: (() => void) | undefined;
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.queue.length - this.head;
  }

  send(element: StreamElement<unknown>): void {
    if (this.closed) return;
    this.queue.push(element);
    this.listener?.();
  }

  get blocked(): boolean {
    return this.size >= this.capacity;
  }

  awaitCapacity(): Promise<void> {
    if (!this.blocked || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The queue lives in this thread: what was sent is already where the consumer reads it. */
  flushed(): Promise<void> {
    return Promise.resolve();
  }

  poll(): StreamElement<unknown> | undefined {
    if (this.head >= this.queue.length) return undefined;
    const element = this.queue[this.head++];
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.waiters.length > 0 && !this.blocked) this.releaseWaiters();
    return element;
  }

  setListener(listener: () => void): void {
    this.listener = listener;
  }

  close(): void {
    this.closed = true;
    this.releaseWaiters();
  }

  private releaseWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
