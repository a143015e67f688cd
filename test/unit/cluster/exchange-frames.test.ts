import { describe, expect, it } from 'vitest';
import { decodeFrame, encodeFrame, ExchangeError, MAX_FRAME_BYTES, ProducerSequencer, ShardReceiver } from '../../../lib/cluster/exchange/index.ts';

describe('exchange frames', () => {
  it('round-trips data, marker and start frames', () => {
    const data = { kind: 'data', edge: '7', producer: 1, epoch: 3, seq: 42, values: [{ a: 1 }, 'x', null], timestamps: [1, 2, 3] } as const;
    expect(decodeFrame(encodeFrame(data), 't')).toEqual(data);
    const marker = { kind: 'marker', edge: '7', producer: 1, epoch: 3, checkpointId: 9, sentThrough: -1 } as const;
    expect(decodeFrame(encodeFrame(marker), 't')).toEqual(marker);
    const start = { kind: 'start', edge: '7', producer: 1, epoch: 4, from: { checkpointId: 9, epoch: 3, sentThrough: 42 } } as const;
    expect(decodeFrame(encodeFrame(start), 't')).toEqual(start);
    expect(decodeFrame(encodeFrame({ kind: 'start', edge: '7', producer: 0, epoch: 1 }), 't')).toEqual({ kind: 'start', edge: '7', producer: 0, epoch: 1 });
  });

  it('splits a batch into frames of at most 256 KiB, numbered in order, losing nothing', () => {
    const seq = new ProducerSequencer({ edge: 'e', producer: 0, epoch: 1 });
    const values = Array.from({ length: 3000 }, (_, i) => ({ i, pad: 'p'.repeat(300) }));
    const frames = seq.dataFrames(values, values.map((v) => v.i));
    expect(frames.length).toBeGreaterThan(3);
    for (const f of frames) expect(f.bytes.byteLength).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i));
    const back = frames.flatMap((f) => {
      const d = decodeFrame(f.bytes, 't');
      return d.kind === 'data' ? d.values : [];
    });
    expect(back).toEqual(values);
    expect(seq.lastSeq).toBe(frames.length - 1);
  });

  it('refuses a single record larger than a frame, naming its size', () => {
    const seq = new ProducerSequencer({ edge: 'e', producer: 0, epoch: 1 });
    expect(() => seq.dataFrames(['x'.repeat(MAX_FRAME_BYTES)], [0])).toThrow(ExchangeError);
    expect(() => seq.dataFrames(['x'.repeat(MAX_FRAME_BYTES)], [0])).toThrow(/one record encodes to \d+ bytes/);
  });

  it('refuses bytes that are not a frame', () => {
    expect(() => decodeFrame(new Uint8Array([0xc1]), 'record 5')).toThrow(/record 5/);
    expect(() => decodeFrame(encodeFrame({ kind: 'marker', edge: 'e', producer: 0, epoch: 1, checkpointId: 1, sentThrough: 0 }).slice(0, 3), 'r')).toThrow(ExchangeError);
  });

  it('a restarted sender must run at a higher epoch than the state it restores', () => {
    const restoredFrom = { edge: 'e', producer: 0, checkpointId: 3, epoch: 2, sentThrough: 5 };
    expect(() => new ProducerSequencer({ edge: 'e', producer: 0, epoch: 2, restoredFrom })).toThrow(/higher epoch/);
    expect(() => new ProducerSequencer({ edge: 'f', producer: 0, epoch: 3, restoredFrom })).toThrow(/edge e/);
  });
});

describe('receiver buffer limit', () => {
  const frame = (epoch: number, seq: number, size: number) =>
    encodeFrame({ kind: 'data', edge: 'e', producer: 0, epoch, seq, values: ['v'.repeat(size)], timestamps: [seq] });

  it('holds frames up to the limit, then lets go (pausing while no completion waits) and re-reads from the first one let go', () => {
    const r = new ShardReceiver('s', { maxBufferedBytes: 1000 });
    const stream = [encodeFrame({ kind: 'start', edge: 'e', producer: 0, epoch: 1 }), ...Array.from({ length: 6 }, (_, i) => frame(1, i, 290))];
    stream.push(encodeFrame({ kind: 'marker', edge: 'e', producer: 0, epoch: 1, checkpointId: 1, sentThrough: 5 }));
    for (let i = 0; i < stream.length; i++) r.accept(stream[i] as Uint8Array, String(i + 1));
    expect(r.buffered).toBeLessThanOrEqual(1000);
    expect(r.paused).toBe(true);
    expect(r.snapshot().resume).toEqual({ at: '2' });
    expect(r.take()).toEqual([]);
    expect(r.rewindPosition(true)).toBeUndefined();
    r.checkpointCompleted({ checkpointId: 1, slotEpochs: [1] });
    const first = r.take().flatMap((b) => b.values);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(6);
    const at = r.rewindPosition(true);
    expect(at).toBeDefined();
    r.rewind();
    for (let i = Number(at) - 1; i < stream.length; i++) r.accept(stream[i] as Uint8Array, String(i + 1));
    const rest = r.take().flatMap((b) => b.values);
    expect([...first, ...rest]).toEqual(Array.from({ length: 6 }, () => 'v'.repeat(290)));
    expect(r.buffered).toBe(0);
  });
});
