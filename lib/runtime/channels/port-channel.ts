import type { MessagePort } from 'node:worker_threads';
import type { StreamElement } from '../../core/index.ts';
import type { ChannelReceiver, ChannelSender } from './channel.ts';
import { decodeBatch, encodeBatch, isBatchWire, type BatchWire } from './batch-codec.ts';

/**
 * A channel between worker threads over a MessagePort. Batches are encoded by the batch codec into one exact-size
 * buffer that is transferred, not copied; control elements travel as small objects. Credit-based flow control:
 * the sender has at most `capacity` messages in flight and the receiver returns a credit for each one it takes.
 */
type Wire = BatchWire | { c: Exclude<StreamElement<unknown>, { kind: 'batch' }> } | { credit: number };

export class PortSender implements ChannelSender {
  private inFlight = 0;
  private pending: StreamElement<unknown>[] = [];
  private waiters: (() => void)[] = [];
  private flushWaiters: (() => void)[] = [];

  constructor(
    private readonly port: MessagePort,
    private readonly capacity: number,
  ) {
    port.on('message', (msg: Wire) => {
      if ('credit' in msg) {
        this.inFlight -= msg.credit;
        this.flush();
      }
    });
  }

  send(element: StreamElement<unknown>): void {
    if (this.pending.length === 0 && this.inFlight < this.capacity) this.post(element);
    else this.pending.push(element);
  }

  get blocked(): boolean {
    return this.pending.length > 0 || this.inFlight >= this.capacity;
  }

  awaitCapacity(): Promise<void> {
    if (!this.blocked) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Elements wait in `pending` until the receiver returns credit; they must be posted before the thread ends. */
  flushed(): Promise<void> {
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.flushWaiters.push(resolve));
  }

  private post(element: StreamElement<unknown>): void {
    this.inFlight++;
    if (element.kind === 'batch') {
      const wire = encodeBatch(element.batch);
      if ('b' in wire) this.port.postMessage(wire, [wire.b.buffer as ArrayBuffer]);
      else this.port.postMessage(wire);
    } else {
      this.port.postMessage({ c: element } satisfies Wire);
    }
  }

  private flush(): void {
    let i = 0;
    while (i < this.pending.length && this.inFlight < this.capacity) this.post(this.pending[i++]!);
    if (i > 0) this.pending = this.pending.slice(i);
    if (this.pending.length === 0 && this.flushWaiters.length > 0) {
      const flushWaiters = this.flushWaiters;
      this.flushWaiters = [];
      for (const w of flushWaiters) w();
    }
    if (!this.blocked && this.waiters.length > 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    }
  }
}

const CREDIT_GROUP = 4;

export class PortReceiver implements ChannelReceiver {
  private owed = 0;
  private queue: StreamElement<unknown>[] = [];
  private head = 0;
  private listener: (() => void) | undefined;
  private closed = false;

  constructor(private readonly port: MessagePort) {
    port.on('message', (msg: Wire) => {
      if (this.closed) return;
      if (isBatchWire(msg)) this.queue.push({ kind: 'batch', batch: decodeBatch(msg) });
      else if ('c' in msg) this.queue.push(msg.c);
      else return;
      this.listener?.();
    });
  }

  poll(): StreamElement<unknown> | undefined {
    if (this.head >= this.queue.length) return undefined;
    const element = this.queue[this.head++]!;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    if (element.kind === 'end') {
      this.port.unref();
      return element;
    }
    // Credits go back in groups (a message per element would cost as much as the element), and at once when the
    // queue runs dry so that the sender is never left waiting for credit that is held here.
    this.owed++;
    if (this.owed >= CREDIT_GROUP || this.head === 0) {
      this.port.postMessage({ credit: this.owed } satisfies Wire);
      this.owed = 0;
    }
    return element;
  }

  setListener(listener: () => void): void {
    this.listener = listener;
  }

  close(): void {
    this.closed = true;
    this.port.close();
  }
}
