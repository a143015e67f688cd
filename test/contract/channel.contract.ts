/**
 * The contract of a channel (ChannelSender + ChannelReceiver), whatever carries it: an in-memory queue within a
 * worker, a MessagePort between threads, later a network or stream channel between processes. A test file calls
 * `runChannelContract(name, open)`; `open(capacity)` returns the two ends of a fresh channel whose producer may
 * have about `capacity` elements in flight (a kind may allow a fixed multiple more), made the way a deployment
 * makes them (through a ChannelFactory).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { END_OF_DATA, END_OF_INPUT, watermarkElement, type RecordBatch, type StreamElement } from '../../lib/core/index.ts';
import type { ChannelReceiver, ChannelSender } from '../../lib/runtime/channels/channel.ts';

export interface OpenChannel {
  readonly sender: ChannelSender;
  readonly receiver: ChannelReceiver;
  /**
   * Ends the producer's side as its worker does when its last task has ended (a thread's port end closes): what
   * `flushed()` said had left must still arrive.
   */
  endProducer(): void;
  /** Frees what the channel holds (ports); called after each test. */
  dispose(): void;
}

export type ChannelOpener = (capacity: number) => OpenChannel;

/** Elements sent without the consumer taking any before the producer must see `blocked`, per unit of capacity. */
const MAX_IN_FLIGHT_PER_CAPACITY = 8;

/** Gives the event loop `turns` turns (messages between threads arrive in them): no wall-clock waits. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Polls the receiver until it has `count` elements, waiting for the listener in between; fails after `maxTurns`. */
async function receive(receiver: ChannelReceiver, count: number, maxTurns = 10_000): Promise<StreamElement<unknown>[]> {
  const got: StreamElement<unknown>[] = [];
  for (let turn = 0; got.length < count; turn++) {
    for (let e = receiver.poll(); e !== undefined; e = receiver.poll()) got.push(e);
    if (got.length >= count) break;
    if (turn > maxTurns) throw new Error(`received ${got.length} of ${count} elements`);
    await turns(1);
  }
  return got;
}

function batch(from: number, size: number): StreamElement<unknown> {
  const values = Array.from({ length: size }, (_, i) => ({ n: from + i, key: `k${(from + i) % 7}` }));
  const b: RecordBatch<unknown> = { values, timestamps: values.map((v) => 1000 + v.n), split: 'split-0', offsets: values.map((v) => v.n) };
  return { kind: 'batch', batch: b };
}

export function runChannelContract(name: string, open: ChannelOpener): void {
  describe(`channel contract: ${name}`, () => {
    let opened: OpenChannel[] = [];
    const channel = (capacity: number): OpenChannel => {
      const ch = open(capacity);
      opened.push(ch);
      return ch;
    };
    afterEach(() => {
      for (const ch of opened) ch.dispose();
      opened = [];
    });

    it('delivers batches and control elements in the order they were sent, each once', async () => {
      const { sender, receiver } = channel(4);
      const sent: StreamElement<unknown>[] = [];
      for (let i = 0; i < 50; i++) {
        sent.push(batch(i * 10, 10));
        if (i % 5 === 0) sent.push(watermarkElement(1000 + i * 10));
        if (i % 7 === 0) sent.push({ kind: 'barrier', checkpointId: i + 1, timestamp: i, savepoint: false } as StreamElement<unknown>);
        if (i === 20) sent.push({ kind: 'idle', idle: true } as StreamElement<unknown>);
      }
      sent.push(END_OF_DATA, END_OF_INPUT);
      // The producer sends only while it is not blocked, as a task does.
      const received = receive(receiver, sent.length);
      for (const element of sent) {
        if (sender.blocked) await sender.awaitCapacity();
        sender.send(element);
      }
      await sender.flushed();
      expect(await received).toEqual(sent);
      expect(receiver.poll()).toBeUndefined();
    });

    it('stops the producer when the consumer takes nothing, and lets it go on once the consumer takes', async () => {
      const capacity = 2;
      const { sender, receiver } = channel(capacity);
      let sent = 0;
      while (!sender.blocked) {
        sender.send(batch(sent, 1));
        sent++;
        if (sent > capacity * MAX_IN_FLIGHT_PER_CAPACITY) break;
        // Let credits (or their absence) show: a channel must block without the consumer, not only before the first turn.
        if (sent % capacity === 0) await turns(5);
      }
      expect(sender.blocked).toBe(true);
      expect(sent).toBeLessThanOrEqual(capacity * MAX_IN_FLIGHT_PER_CAPACITY);
      let released = false;
      const capacityBack = sender.awaitCapacity().then(() => (released = true));
      await turns(50);
      expect(released).toBe(false);
      // The consumer takes: capacity comes back, and everything sent arrives in order.
      const got = await receive(receiver, sent);
      await capacityBack;
      for (let i = 0; i < 200 && sender.blocked; i++) await turns(1);
      expect(sender.blocked).toBe(false);
      expect(got.map((e) => (e.kind === 'batch' ? (e.batch.values[0] as { n: number }).n : -1))).toEqual(Array.from({ length: sent }, (_, i) => i));
    });

    it('wakes the consumer when an element arrives, including the end of input after everything else', async () => {
      const { sender, receiver } = channel(4);
      let wakeups = 0;
      receiver.setListener(() => wakeups++);
      expect(receiver.poll()).toBeUndefined();
      sender.send(batch(0, 3));
      sender.send(END_OF_INPUT);
      await sender.flushed();
      const got = await receive(receiver, 2);
      expect(wakeups).toBeGreaterThanOrEqual(1);
      expect(got.map((e) => e.kind)).toEqual(['batch', 'end']);
      await turns(20);
      expect(receiver.poll()).toBeUndefined();
    });

    it('flushed() resolves once every element sent has left the producer, even past the capacity, in order', async () => {
      const { sender, receiver, endProducer } = channel(1);
      const total = 40;
      for (let i = 0; i < total; i++) sender.send(batch(i, 1));
      // The consumer takes while the producer waits for the flush: elements held back for credit go out then.
      const got = receive(receiver, total);
      await sender.flushed();
      // After the flush the producer's side may end at once: nothing sent may be lost with it.
      endProducer();
      expect((await got).map((e) => (e.kind === 'batch' ? (e.batch.values[0] as { n: number }).n : -1))).toEqual(Array.from({ length: total }, (_, i) => i));
    });

    it('stops delivering once the receiver is closed (the job is cancelled); sending then does not throw', async () => {
      const { sender, receiver } = channel(4);
      sender.send(batch(0, 1));
      expect(await receive(receiver, 1)).toHaveLength(1);
      receiver.close();
      await turns(5);
      let wakeups = 0;
      receiver.setListener(() => wakeups++);
      expect(() => {
        sender.send(batch(1, 1));
        sender.send(END_OF_INPUT);
      }).not.toThrow();
      await turns(50);
      expect(receiver.poll()).toBeUndefined();
      expect(wakeups).toBe(0);
    });

    it('carries values exactly: lone surrogates, U+FFFD, numbers at the edges, nested objects and arrays, null', async () => {
      const { sender, receiver } = channel(4);
      const values = [
        { account: '\uD800x', amount: 1 },
        { account: 'a\uDC00', amount: -0.5 },
        { account: '\uFFFDx', amount: Number.MAX_SAFE_INTEGER },
        { account: '\uD83D\uDE00 pair', amount: Number.MIN_SAFE_INTEGER, tiny: 5e-324, big: 1.7976931348623157e308 },
        { nested: { ['k\uDBFF']: ['\uDFFF\uD800', { deep: [1, 2, [3, null]] }] }, flag: true, nothing: null },
        'a plain string',
        42,
        [1, 'two', { three: 3 }],
      ];
      const sentBatch: RecordBatch<unknown> = { values, timestamps: values.map((_, i) => 1_700_000_000_000 + i), split: 'f.jsonl:\uD800', offsets: values.map((_, i) => i * 100) };
      sender.send({ kind: 'batch', batch: sentBatch });
      const [got] = await receive(receiver, 1);
      expect(got?.kind).toBe('batch');
      const b = (got as { batch: RecordBatch<unknown> }).batch;
      expect(b.values).toEqual(values);
      expect(b.timestamps).toEqual(sentBatch.timestamps);
      expect(b.offsets).toEqual(sentBatch.offsets);
      expect(b.split).toBe(sentBatch.split);
      // Code units, not only string equality of a possibly normalised form.
      const accounts = (b.values.slice(0, 4) as { account: string }[]).map((v) => [...v.account].map((c) => c.charCodeAt(0)));
      expect(accounts).toEqual((values.slice(0, 4) as { account: string }[]).map((v) => [...v.account].map((c) => c.charCodeAt(0))));
      expect(Object.is((b.values[1] as { amount: number }).amount, -0.5)).toBe(true);
    });
  });
}
