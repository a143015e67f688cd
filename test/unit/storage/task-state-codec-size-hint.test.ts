import { describe, it, expect } from 'vitest';
import { decodeTaskSnapshot, encodeTaskSnapshot } from '../../../lib/storage/index.ts';
import type { TaskSnapshot } from '../../../lib/storage/index.ts';

/** A snapshot of about `mb` MB: one key group entry per MB, each with a distinct 1 MB string value. */
function largeSnapshot(mb: number, seed: string): TaskSnapshot {
  const entries: [string, string, unknown][] = [];
  for (let i = 0; i < mb; i++) entries.push([`${seed}-${i}`, '', { text: `${seed}${i}`.padEnd(1 << 20, '.'), shared: 'x' }]);
  return {
    vertex: 1,
    subtask: 0,
    operators: [{ nodeId: 2, watermark: 5, keyed: { maxParallelism: 128, keyGroups: [{ keyGroup: 3, states: { big: entries } }] } }],
  };
}

describe('encodeTaskSnapshot size hint', () => {
  it('gives the same bytes with a fitting, a too small, a too large or no hint', () => {
    const snapshot = largeSnapshot(20, 'a');
    const plain = Buffer.from(encodeTaskSnapshot(snapshot));
    expect(plain.byteLength).toBeGreaterThan(20 << 20);
    for (const sizeHint of [plain.byteLength, 17 << 20, 64 << 20, 100]) {
      expect(Buffer.from(encodeTaskSnapshot(snapshot, { sizeHint })).equals(plain)).toBe(true);
    }
    expect(decodeTaskSnapshot(plain)).toEqual(snapshot);
  });

  it('leaves earlier results intact when later snapshots are encoded', () => {
    const first = largeSnapshot(18, 'first');
    const second = largeSnapshot(18, 'second');
    const a = encodeTaskSnapshot(first, { sizeHint: 20 << 20 });
    const small = encodeTaskSnapshot({ vertex: 1, subtask: 0, operators: [{ nodeId: 2, watermark: 6 }] });
    const b = encodeTaskSnapshot(second, { sizeHint: a.byteLength });
    expect(decodeTaskSnapshot(a)).toEqual(first);
    expect(decodeTaskSnapshot(small).operators).toEqual([{ nodeId: 2, watermark: 6 }]);
    expect(decodeTaskSnapshot(b)).toEqual(second);
  });
});
