import { createHash } from 'node:crypto';
import type { Key, KeyGroupRange } from './key-group.ts';

/**
 * Key groups from Kinesis hash keys. Kinesis places a record in the shard whose hash-key range contains
 * MD5(UTF-8 partition key) read as an unsigned 128-bit big-endian number; shards own contiguous ranges of that
 * space. Cutting the same space into `maxParallelism` equal, contiguous key groups makes a key group's records
 * lie in the shards that overlap its hash range, so a reader of a hash range sees exactly its key groups:
 *   keyGroup = floor(MD5(key) * maxParallelism / 2^128)
 * Computed exactly (BigInt): a key group boundary may fall anywhere, including inside a shard.
 */

const TWO_POW_128 = 1n << 128n;
/** Hash keys are 0 .. 2^128 - 1, as Kinesis writes them (decimal strings). */
export const MAX_HASH_KEY = TWO_POW_128 - 1n;

/** The Kinesis hash key of a partition key: MD5 over its UTF-8 bytes, as an unsigned 128-bit number. */
export function kinesisHashKey(partitionKey: string): bigint {
  const digest = createHash('md5').update(partitionKey, 'utf8').digest();
  return (digest.readBigUInt64BE(0) << 64n) | digest.readBigUInt64BE(8);
}

/** The key group that a hash key lies in. */
export function keyGroupOfHashKey(hashKey: bigint, maxParallelism: number): number {
  return Number((hashKey * BigInt(maxParallelism)) >> 128n);
}

/**
 * The `kinesis-hash` key group of a key used as a Kinesis partition key. Numbers are hashed as their decimal text
 * (String(key)), which is what a producer that writes the number as the partition key sends.
 */
export function kinesisKeyGroupOf(key: Key, maxParallelism: number): number {
  return keyGroupOfHashKey(kinesisHashKey(typeof key === 'string' ? key : String(key)), maxParallelism);
}

/** First hash key of key group `keyGroup`: the smallest h with floor(h * M / 2^128) >= keyGroup. */
function firstHashKeyOf(keyGroup: number, maxParallelism: number): bigint {
  const m = BigInt(maxParallelism);
  const scaled = BigInt(keyGroup) * TWO_POW_128;
  return (scaled + m - 1n) / m;
}

/** Inclusive hash-key range [first, last] covered by an inclusive key-group range, as bigints. */
export function hashKeyRangeOfKeyGroups(range: KeyGroupRange, maxParallelism: number): { readonly first: bigint; readonly last: bigint } {
  return { first: firstHashKeyOf(range.start, maxParallelism), last: firstHashKeyOf(range.end + 1, maxParallelism) - 1n };
}

/**
 * Inclusive hash-key range covered by an inclusive key-group range, as decimal strings (the form of Kinesis'
 * StartingHashKey / EndingHashKey and of PutRecord's ExplicitHashKey).
 */
export function hashKeyRangeStringsOfKeyGroups(range: KeyGroupRange, maxParallelism: number): { readonly first: string; readonly last: string } {
  const { first, last } = hashKeyRangeOfKeyGroups(range, maxParallelism);
  return { first: first.toString(), last: last.toString() };
}

/** Key groups that hash keys first..last (inclusive) touch: the key groups of their two ends. */
export function keyGroupsOfHashKeyRange(first: bigint, last: bigint, maxParallelism: number): KeyGroupRange {
  return { start: keyGroupOfHashKey(first, maxParallelism), end: keyGroupOfHashKey(last, maxParallelism) };
}
