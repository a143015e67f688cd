import { describe, expect, it } from 'vitest';
import { InvalidKeyError, keyGroupOf, subtaskForKeyGroup, UserFunctionError, type StreamElement } from '../../../lib/core/index.ts';
import { RecordWriter } from '../../../lib/runtime/record-writer.ts';
import { LocalChannel } from '../../../lib/runtime/channels/local-channel.ts';

function drain(ch: LocalChannel): StreamElement<unknown>[] {
  const out: StreamElement<unknown>[] = [];
  for (let e = ch.poll(); e !== undefined; e = ch.poll()) out.push(e);
  return out;
}
const values = (els: StreamElement<unknown>[]) => els.flatMap((e) => (e.kind === 'batch' ? e.batch.values : []));

describe('RecordWriter partitioners', () => {
  const batch = { values: Array.from({ length: 100 }, (_, i) => `k${i}`), timestamps: Array.from({ length: 100 }, (_, i) => i), split: 's', offsets: Array.from({ length: 100 }, (_, i) => i) };

  it('hash sends each record to the subtask owning its key group, keeping timestamps and offsets aligned', () => {
    const chans = [new LocalChannel(100), new LocalChannel(100), new LocalChannel(100)];
    const w = new RecordWriter({ kind: 'hash', keySelector: (v) => v as string }, chans, 128, { name: 'p', subtask: 0 });
    w.emit(batch);
    chans.forEach((ch, t) => {
      for (const el of drain(ch)) {
        if (el.kind !== 'batch') continue;
        el.batch.values.forEach((v, i) => {
          expect(subtaskForKeyGroup(keyGroupOf(v as string, 128), 3, 128)).toBe(t);
          expect(el.batch.timestamps[i]).toBe(Number((v as string).slice(1)));
          expect(el.batch.offsets![i]).toBe(Number((v as string).slice(1)));
        });
      }
    });
  });

  it('rebalance spreads whole batches round-robin, broadcast copies to all, forward to one', () => {
    const chans = [new LocalChannel(100), new LocalChannel(100)];
    const rb = new RecordWriter({ kind: 'rebalance' }, chans, 128, { name: 'p', subtask: 0 });
    for (let i = 0; i < 4; i++) rb.emit(batch);
    expect(chans.map((c) => drain(c).length)).toEqual([2, 2]);
    const bc = new RecordWriter({ kind: 'broadcast' }, chans, 128, { name: 'p', subtask: 0 });
    bc.emit(batch);
    expect(chans.map((c) => values(drain(c)).length)).toEqual([100, 100]);
    const fw = new RecordWriter({ kind: 'forward' }, [chans[1]!], 128, { name: 'p', subtask: 1 });
    fw.emit(batch);
    expect(chans.map((c) => values(drain(c)).length)).toEqual([0, 100]);
  });

  it('reports a key selector failure with the record origin', () => {
    const w = new RecordWriter({ kind: 'hash', keySelector: (v) => { if (v === 'k7') throw new Error('bad key'); return v as string; } }, [new LocalChannel(4), new LocalChannel(4)], 128, { name: 'Map', subtask: 1 });
    try {
      w.emit(batch);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(UserFunctionError);
      expect((err as UserFunctionError).origin).toEqual({ split: 's', offset: 7 });
      expect((err as Error).message).toMatch(/keyBy after Map.*subtask 1.*split s offset 7.*bad key/);
    }
  });

  it.each([NaN, Infinity, -Infinity, undefined, null, {}, true])('refuses the key %s with the record origin, sending nothing', (bad) => {
    const chans = [new LocalChannel(4), new LocalChannel(4)];
    const w = new RecordWriter({ kind: 'hash', keySelector: (v) => (v === 'k3' ? (bad as unknown as string) : (v as string)) }, chans, 128, { name: 'Map', subtask: 0 });
    const err = (() => {
      try {
        w.emit(batch);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(UserFunctionError);
    expect((err as UserFunctionError).origin).toEqual({ split: 's', offset: 3 });
    expect((err as UserFunctionError).cause).toBeInstanceOf(InvalidKeyError);
    expect((err as Error).message).toMatch(/keys must be strings or finite numbers/);
    expect(chans.map((c) => drain(c).length)).toEqual([0, 0]);
  });

  it('reports blocked channels until the consumer polls', async () => {
    const ch = new LocalChannel(2);
    const w = new RecordWriter({ kind: 'forward' }, [ch], 128, { name: 'p', subtask: 0 });
    w.emit(batch);
    expect(w.blocked).toBe(false);
    w.emit(batch);
    expect(w.blocked).toBe(true);
    let released = false;
    const wait = w.awaitCapacity().then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    ch.poll();
    await wait;
    expect(released).toBe(true);
  });
});
