import { describe, expect, it } from 'vitest';
import { keyGroupRangeForSubtask, kinesisKeyGroupOf } from '../../../lib/core/index.ts';
import {
  checkAlignedBatch,
  checkAlignedKey,
  KeyGroupMismatchError,
  shardOfSplitId,
  type AlignedSlotKeyGroups,
} from '../../../lib/cluster/aligned-key-groups.ts';

const M = 128;
const slot = (s: number, p: number): AlignedSlotKeyGroups => ({ slot: s, range: keyGroupRangeForSubtask(s, p, M), maxParallelism: M });
const keys = Array.from({ length: 300 }, (_, i) => `acct-${i}`);
const ownerOf = (key: string, p: number) => [...Array(p).keys()].find((s) => { const r = slot(s, p).range; const kg = kinesisKeyGroupOf(key, M); return kg >= r.start && kg <= r.end; });

describe('aligned key-group check', () => {
  it('accepts every key in its own slot and refuses it in every other slot', () => {
    for (const p of [2, 3]) {
      for (const key of keys) {
        const owner = ownerOf(key, p) as number;
        expect(() => checkAlignedKey(key, 'shardId-000000000001', slot(owner, p))).not.toThrow();
        for (let s = 0; s < p; s++) if (s !== owner) expect(() => checkAlignedKey(key, 'shardId-000000000001', slot(s, p))).toThrow(KeyGroupMismatchError);
      }
    }
  });

  it('names key, key group, shard, slot and operator, with the KEY_GROUP_MISMATCH code', () => {
    const key = keys.find((k) => ownerOf(k, 2) === 1) as string;
    let error: unknown;
    try {
      checkAlignedBatch([{ k: 'x' }, { k: key }], (v) => (v.k === 'x' ? (keys.find((k) => ownerOf(k, 2) === 0) as string) : v.k), 'shardId-000000000003', slot(0, 2), 'Counts');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(KeyGroupMismatchError);
    const e = error as KeyGroupMismatchError;
    expect(e.code).toBe('KEY_GROUP_MISMATCH');
    expect(e.retriable).toBe(false);
    expect(e.key).toBe(key);
    expect(e.slot).toBe(0);
    expect(e.shard).toBe('shardId-000000000003');
    expect(e.message).toContain(JSON.stringify(key));
    expect(e.message).toContain('shard shardId-000000000003');
    expect(e.message).toContain("slot 0's key groups [0, 63]");
    expect(e.message).toContain('operator "Counts"');
    expect(e.message).toContain(`key group ${kinesisKeyGroupOf(key, M)}`);
  });

  it('passes a batch of the slot\'s own keys, and rejects invalid keys as routing does', () => {
    const own = keys.filter((k) => ownerOf(k, 3) === 2);
    expect(() => checkAlignedBatch(own, (k) => k, 'shardId-000000000000', slot(2, 3))).not.toThrow();
    expect(() => checkAlignedBatch([{}], () => undefined as unknown as string, 's', slot(0, 1))).toThrow(/key/i);
  });

  it('finds the shard in an aligned sub-split id', () => {
    expect(shardOfSplitId('shardId-000000000004@kg0-63')).toBe('shardId-000000000004');
    expect(shardOfSplitId('shardId-000000000004')).toBe('shardId-000000000004');
  });
});
