import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeMarker, encodeMarker, type RecoveryMarker } from '../../../lib/state/rocksdb/db-layout.ts';

const marker: RecoveryMarker = { checkpointId: 7, sealedGeneration: 12, keyGroupStart: 0, keyGroupEnd: 127, maxParallelism: 128, entryCount: 3, timers: [1, 2] };

describe('RocksDB recovery marker format', () => {
  it('keeps the on-disk field name of the sealed generation (sealedEpoch), so databases written before the rename restore', () => {
    const packr = new Packr({ useRecords: false });
    const stored = packr.unpack(encodeMarker(marker)) as Record<string, unknown>;
    expect(stored['sealedEpoch']).toBe(12);
    expect(stored).not.toHaveProperty('sealedGeneration');
    // What a database written before the rename holds.
    const old = packr.pack({ checkpointId: 7, sealedEpoch: 12, keyGroupStart: 0, keyGroupEnd: 127, maxParallelism: 128, entryCount: 3, timers: [1, 2] });
    expect(decodeMarker(old, 'test')).toEqual(marker);
    expect(decodeMarker(encodeMarker(marker), 'test')).toEqual(marker);
  });

  it('refuses a marker without its sealed generation', () => {
    const packr = new Packr({ useRecords: false });
    expect(() => decodeMarker(packr.pack({ checkpointId: 7 }), 'test')).toThrow(/sealedEpoch/);
  });
});
