import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { RecordBatch, StreamElement } from '../../../lib/core/index.ts';
import { PortReceiver, PortSender } from '../../../lib/runtime/channels/port-channel.ts';
import { encodeBatch } from '../../../lib/runtime/channels/batch-codec.ts';

/** Sends `batch` through a real MessagePort channel and returns what the receiving side polls. */
async function roundTrip(batch: RecordBatch<unknown>): Promise<RecordBatch<unknown>> {
  const { port1, port2 } = new MessageChannel();
  const sender = new PortSender(port1, 4);
  const receiver = new PortReceiver(port2);
  const received = new Promise<StreamElement<unknown>>((resolve) => {
    receiver.setListener(() => {
      const element = receiver.poll();
      if (element !== undefined) resolve(element);
    });
  });
  sender.send({ kind: 'batch', batch });
  const element = await received;
  receiver.close();
  port1.close();
  if (element.kind !== 'batch') throw new TypeError(`expected a batch, got ${element.kind}`);
  return element.batch;
}

describe('port channel batch codec', () => {
  it('keeps strings with lone surrogates as they are, in values, nested objects and keys', async () => {
    const values = [
      { account: '\uD800x', amountCents: 1, ts: 1 },
      { account: 'a\uDC00', amountCents: 2, ts: 2 },
      { account: '\uDBFF', nested: { ['k\uD800']: ['\uDFFF\uD800'] }, ts: 3 },
      { account: '\uD83D\uDE00 paired is fine', ts: 4 },
    ];
    const batch = await roundTrip({ values, timestamps: [1, 2, 3, 4], split: 'in.jsonl:0', offsets: [0, 10, 20, 30] });
    expect(batch).toEqual({ values, timestamps: [1, 2, 3, 4], split: 'in.jsonl:0', offsets: [0, 10, 20, 30] });
    // toEqual compares strings exactly; check the code units too, to be explicit about what must survive.
    expect((batch.values[0] as { account: string }).account.charCodeAt(0)).toBe(0xd800);
  });

  it('keeps real U+FFFD characters, and distinct lone surrogates distinct', async () => {
    const values = ['\uFFFDx', '\uD800x', '\uDBFFx'];
    const batch = await roundTrip({ values, timestamps: [1, 2, 3] });
    expect(batch.values).toEqual(values);
    expect(new Set(batch.values).size).toBe(3);
  });

  it('transfers ordinary batches as msgpackr bytes, and only batches with U+FFFD in their encoding as a clone', () => {
    const plain = encodeBatch({ values: [{ account: 'a-1', amountCents: 5, ts: 1 }], timestamps: [1] });
    expect('b' in plain).toBe(true);
    expect('v' in encodeBatch({ values: ['\uD800'], timestamps: [1] })).toBe(true);
  });

  it('round-trips ordinary batches unchanged', async () => {
    const values = Array.from({ length: 500 }, (_, i) => ({ account: `a-${i % 17}`, amountCents: i * 3, ts: 1_700_000_000_000 + i, tag: 'ünïcödé ✓' }));
    const timestamps = values.map((v) => v.ts);
    expect(await roundTrip({ values, timestamps })).toEqual({ values, timestamps, split: undefined, offsets: undefined });
  });
});
