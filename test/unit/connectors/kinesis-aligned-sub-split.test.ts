import { createHash } from 'node:crypto';
import type { _Record } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { hashKeyRangeOfKeyGroups, kinesisKeyGroupOf, MAX_HASH_KEY } from '../../../lib/core/index.ts';
import { alignedRecordFilter, alignedSubSplit, checkAlignedKeyGroups, shardIdOf } from '../../../lib/connectors/aws/kinesis/aligned-sub-split.ts';
import type { KinesisShardSplit } from '../../../lib/connectors/aws/kinesis/shard-split.ts';
import { decodeRecords } from '../../../lib/connectors/aws/kinesis/record-decoder.ts';

const M = 128;
const split = (id: string, first: bigint, last: bigint): KinesisShardSplit => ({
  id,
  hashKeyRange: { startingHashKey: first.toString(), endingHashKey: last.toString() },
  rootShardId: id,
  position: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '42' },
  finished: false,
});
const record = (key: string, seq: string): _Record => ({ PartitionKey: key, SequenceNumber: seq, Data: Buffer.from(JSON.stringify(key)) }) as _Record;

describe('aligned sub-splits', () => {
  // A shard from inside key group 40 to the end of key group 70: not aligned to key groups.
  const first = hashKeyRangeOfKeyGroups({ start: 40, end: 40 }, M).first + 999n;
  const last = hashKeyRangeOfKeyGroups({ start: 70, end: 70 }, M).last - 5n;
  const shard = split('shardId-000000000007', first, last);

  it('cuts a shard to the slot\'s key groups, keeping its position; none when they do not overlap', () => {
    const sub = alignedSubSplit(shard, { start: 43, end: 85, maxParallelism: M })!;
    expect(sub).toMatchObject({ id: 'shardId-000000000007@kg43-70', shardId: 'shardId-000000000007', keyGroups: { start: 43, end: 70 }, position: shard.position });
    expect(alignedSubSplit(shard, { start: 0, end: 42, maxParallelism: M })!.keyGroups).toEqual({ start: 40, end: 42 });
    expect(alignedSubSplit(shard, { start: 86, end: 127, maxParallelism: M })).toBeUndefined();
    expect(alignedSubSplit(sub, { start: 43, end: 85, maxParallelism: M })).toBe(sub);
    // A sub-split of another slot layout (a restore at another parallelism) is cut to this slot, position kept.
    expect(alignedSubSplit(sub, { start: 0, end: 63, maxParallelism: M })).toMatchObject({
      id: 'shardId-000000000007@kg43-63',
      shardId: 'shardId-000000000007',
      keyGroups: { start: 43, end: 63 },
      position: shard.position,
    });
    expect(alignedSubSplit(sub, { start: 71, end: 127, maxParallelism: M })).toBeUndefined();
    expect(shardIdOf(sub)).toBe('shardId-000000000007');
    expect(shardIdOf(shard)).toBe('shardId-000000000007');
  });

  it('keeps exactly the records of its key groups that lie in the shard; one slot owns the foreign ones', () => {
    const slotA = alignedSubSplit(shard, { start: 0, end: 42, maxParallelism: M })!; // owns the shard's first key group
    const slotB = alignedSubSplit(shard, { start: 43, end: 85, maxParallelism: M })!;
    const fa = alignedRecordFilter(slotA, M);
    const fb = alignedRecordFilter(slotB, M);
    let inShard = 0;
    let foreign = 0;
    for (let i = 0; i < 3000; i++) {
      const key = `k${i}`;
      const r = record(key, String(i));
      const kg = kinesisKeyGroupOf(key, M);
      const h = BigInt(`0x${createHash('md5').update(key).digest('hex')}`);
      if (h < first || h > last) {
        foreign++;
        expect(fa(r)).toBe('foreign');
        expect(fb(r)).toBe('skip');
        continue;
      }
      inShard++;
      expect(fa(r)).toBe(kg <= 42 ? 'keep' : 'skip');
      expect(fb(r)).toBe(kg >= 43 ? 'keep' : 'skip');
    }
    expect(inShard).toBeGreaterThan(100);
    expect(foreign).toBeGreaterThan(100);
  });

  it('refuses a slot range that is not one of maxParallelism\'s key groups', () => {
    expect(() => checkAlignedKeyGroups({ start: 0, end: 127, maxParallelism: M }, 'src')).not.toThrow();
    expect(() => checkAlignedKeyGroups(undefined, 'src')).not.toThrow();
    for (const bad of [{ start: 5, end: 2 }, { start: -1, end: 3 }, { start: 0, end: 128 }, { start: 0.5, end: 3 }]) {
      expect(() => checkAlignedKeyGroups({ ...bad, maxParallelism: M }, 'kinesis source "s"')).toThrow(/kinesis source "s": alignedKeyGroups/);
    }
  });

  it('decodes only kept records, dead-letters foreign ones, and still ends at the fetch\'s last sequence number', () => {
    const whole = split('shardId-000000000000', 0n, MAX_HASH_KEY);
    const sub = alignedSubSplit(whole, { start: 0, end: 63, maxParallelism: M })!;
    const keys = Array.from({ length: 50 }, (_, i) => `key-${i}`);
    const records = keys.map((k, i) => record(k, String(100 + i)));
    const f = alignedRecordFilter(sub, M);
    const chunk = decodeRecords(records, 'stream', 'shardId-000000000000', (d) => JSON.parse(Buffer.from(d).toString()) as string, { fate: f, foreignReason: 'x' });
    expect(chunk.values).toEqual(keys.filter((k) => kinesisKeyGroupOf(k, M) <= 63));
    expect(chunk.deadLetters).toEqual([]);
    expect(chunk.lastSequenceNumber).toBe('149');
    const none = decodeRecords(records, 'stream', 's', (d) => d, { fate: () => 'foreign', foreignReason: 'explicit hash key' });
    expect(none.values).toEqual([]);
    expect(none.deadLetters.map((l) => l.reason)).toEqual(records.map(() => 'explicit hash key'));
  });
});
