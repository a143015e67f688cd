import type { Key, KeyGroupRange } from './key-group.ts';
import { md5Words } from './md5.ts';

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

const state = new Int32Array(4);

/**
 * The hash key of `partitionKey` as four unsigned 32-bit words, most significant first, written to `out`: MD5
 * (whose digest bytes are its state words in little-endian order) read as a big-endian 128-bit number.
 */
export function kinesisHashWords(partitionKey: string, out: Uint32Array): void {
  md5Words(partitionKey, state);
  for (let i = 0; i < 4; i++) {
    const w = state[i] as number;
    out[i] = (((w & 0xff) << 24) | ((w & 0xff00) << 8) | ((w >>> 8) & 0xff00) | (w >>> 24)) >>> 0;
  }
}

/** A hash key as four 32-bit words, most significant first. */
export function hashKeyWords(hashKey: bigint): Uint32Array {
  const out = new Uint32Array(4);
  for (let i = 0; i < 4; i++) out[i] = Number((hashKey >> BigInt(96 - 32 * i)) & 0xffffffffn);
  return out;
}

/** Compares two hash keys given as words: negative, 0 or positive. */
export function compareHashWords(a: Uint32Array, b: Uint32Array): number {
  for (let i = 0; i < 4; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

const scratch = new Uint32Array(4);

/** The Kinesis hash key of a partition key: MD5 over its UTF-8 bytes, as an unsigned 128-bit number. */
export function kinesisHashKey(partitionKey: string): bigint {
  kinesisHashWords(partitionKey, scratch);
  let h = 0n;
  for (let i = 0; i < 4; i++) h = (h << 32n) | BigInt(scratch[i] as number);
  return h;
}

const TWO_POW_32 = 4294967296;

/**
 * floor(h * M / 2^128) for a hash key h given as words (kinesisHashWords), without BigInt (the hot path): h is four 32-bit words w0..w3 (big-endian),
 * and the quotient is carried from the lowest word up, q_i = floor((w_i * M + q_{i+1}) / 2^32), which is exact
 * because every w_i * M + q stays below 2^53 for M <= 2^20 (MAX_MAX_PARALLELISM is 2^15).
 */
export function keyGroupOfHashWords(w: Uint32Array, maxParallelism: number): number {
  const m = maxParallelism;
  const q3 = Math.floor(((w[3] as number) * m) / TWO_POW_32);
  const q2 = Math.floor(((w[2] as number) * m + q3) / TWO_POW_32);
  const q1 = Math.floor(((w[1] as number) * m + q2) / TWO_POW_32);
  return Math.floor(((w[0] as number) * m + q1) / TWO_POW_32);
}

/**
 * Recent keys' key groups: a keyed operator looks its key up once per record for routing and again for keyed
 * state, and MD5 costs about a microsecond on a loaded machine where a Map lookup costs tens of nanoseconds. Bounded:
 * cleared when full (a direct-mapped array was tried: faster for keys that never repeat, slower for ones that do,
 * through slot collisions). Valid for one maxParallelism at a time (cleared when it changes).
 */
const CACHE_MAX_KEYS = 16384;
const cache = new Map<string, number>();
let cachedFor = 0;

/** The key group that a hash key lies in. */
export function keyGroupOfHashKey(hashKey: bigint, maxParallelism: number): number {
  return Number((hashKey * BigInt(maxParallelism)) >> 128n);
}

/**
 * The `kinesis-hash` key group of a key used as a Kinesis partition key. Numbers are hashed as their decimal text
 * (String(key)), which is what a producer that writes the number as the partition key sends.
 */
export function kinesisKeyGroupOf(key: Key, maxParallelism: number): number {
  const text = typeof key === 'string' ? key : String(key);
  if (cachedFor !== maxParallelism) {
    cache.clear();
    cachedFor = maxParallelism;
  }
  let keyGroup = cache.get(text);
  if (keyGroup === undefined) {
    kinesisHashWords(text, scratch);
    keyGroup = keyGroupOfHashWords(scratch, maxParallelism);
    if (cache.size >= CACHE_MAX_KEYS) cache.clear();
    cache.set(text, keyGroup);
  }
  return keyGroup;
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
