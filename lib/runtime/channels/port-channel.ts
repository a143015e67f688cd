import type { MessagePort } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import type { RecordBatch, StreamElement } from '../../core/index.ts';
import type { ChannelReceiver, ChannelSender } from './channel.ts';

/**
 * A channel between worker threads over a MessagePort. Batches are encoded with msgpackr into one exact-size
 * buffer that is transferred, not copied; control elements travel as small objects. Credit-based flow control:
 * the sender has at most `capacity` messages in flight and the receiver returns a credit for each one it takes.
 */
type BatchTuple = [values: unknown[], timestamps: number[], split: string | null, offsets: number[] | null];
/** A batch on the wire: msgpackr bytes, or the batch itself for the structured clone (see encodeBatch). */
export type BatchWire = { b: Uint8Array } | { v: BatchTuple };
type Wire = BatchWire | { c: Exclude<StreamElement<unknown>, { kind: 'batch' }> } | { credit: number };

const packr = new Packr({ useRecords: true, moreTypes: true });

/**
 * msgpackr writes strings as UTF-8, which cannot hold a lone surrogate ("\uD800x" from a JSON "\ud800" escape): it
 * writes U+FFFD instead, so across threads such a string would change (and its key land in the wrong key group),
 * while in one thread it stays as it was. Every lone surrogate therefore leaves these bytes in the encoding.
 */
const REPLACEMENT_CHARACTER_UTF8 = Buffer.from([0xef, 0xbf, 0xbd]);

/**
 * A batch as it crosses the port: msgpackr bytes (transferred), or, when the bytes contain a U+FFFD, the batch
 * itself for the structured clone, which keeps strings as UTF-16 so lone surrogates survive. The check is one
 * native byte search over the encoding (no walk over the values); batches with real U+FFFD characters take the
 * slower clone too, and arrive the same.
 */
export function encodeBatch(batch: RecordBatch<unknown>): BatchWire {
  const tuple: BatchTuple = [batch.values, batch.timestamps, batch.split ?? null, batch.offsets ?? null];
  const packed = packr.pack(tuple);
  if (packed.indexOf(REPLACEMENT_CHARACTER_UTF8) >= 0) return { v: tuple };
  // packr reuses a large buffer; copy out exactly the bytes so only they are transferred.
  return { b: Uint8Array.prototype.slice.call(packed, 0, packed.length) as Uint8Array };
}

export function decodeBatch(wire: BatchWire): RecordBatch<unknown> {
  const [values, timestamps, split, offsets] = 'v' in wire ? wire.v : (packr.unpack(wire.b) as BatchTuple);
  return { values, timestamps, split: split ?? undefined, offsets: offsets ?? undefined };
}

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
      if ('b' in msg || 'v' in msg) this.queue.push({ kind: 'batch', batch: decodeBatch(msg) });
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
