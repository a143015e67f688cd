import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import { decodeRow, encodeRow } from '../../../lib/state/snapshot-format/row-codec.ts';
import { packKeepingLoneSurrogates } from '../../../lib/state/snapshot-format/lone-surrogate-strings.ts';
import { decodeTaskSnapshot, encodeTaskSnapshot } from '../../../lib/storage/index.ts';

describe('state keeps strings with lone surrogates', () => {
  it('in state rows (RocksDB values, state files): values, lists, maps and sets', () => {
    const row = [
      1, null, '\uD800x',
      2, 'ns\uDC00', ['a', '\uDBFF', '\uFFFDx'],
      3, null, [['k\uD800', { account: '\uDFFFy', n: 1 }]],
      4, null, new Map([['\uD800', new Set(['\uDC00', 'plain'])]]),
    ];
    const decoded = decodeRow(Buffer.from(encodeRow(row)), 'test');
    expect(decoded).toEqual(row);
    expect((decoded[2] as string).charCodeAt(0)).toBe(0xd800);
  });

  it('in task state files, with shared references and cycles as the structured-clone packer keeps them', () => {
    const shared = { account: '\uD800x', total: 5 };
    const cyclic: { self?: unknown; name: string } = { name: 'a\uDC00' };
    cyclic.self = cyclic;
    const snapshot = { vertex: 1, subtask: 0, operators: [{ nodeId: 2, watermark: 3, operatorState: [shared, shared, cyclic] }] };
    const decoded = decodeTaskSnapshot(encodeTaskSnapshot(snapshot as never));
    const state = decoded.operators[0]!.operatorState as [typeof shared, typeof shared, typeof cyclic];
    expect(state[0]).toEqual(shared);
    expect(state[0]).toBe(state[1]);
    expect(state[2].name).toBe('a\uDC00');
    expect(state[2].self).toBe(state[2]);
  });

  it('encodes everything else exactly as msgpackr does (no extension, the same bytes)', () => {
    const packr = new Packr({ structuredClone: true, moreTypes: true });
    for (const value of [['\uFFFDx', 'ünï', 1.5, { a: '\uD83D\uDE00' }], new Float64Array([1e300, -2.5e-300]), 'plain']) {
      const expected = Buffer.from(new Packr({ structuredClone: true, moreTypes: true }).pack(value));
      expect(Buffer.from(packKeepingLoneSurrogates(packr, value))).toEqual(expected);
    }
  });
});
