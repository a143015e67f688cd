import { keyGroupOf, type Key } from './key-group.ts';
import { kinesisKeyGroupOf } from './kinesis-hash.ts';

/**
 * How a keyed edge maps keys to key groups: `murmur`, the engine's hash (`keyGroupOf`), or `kinesis-hash`, the MD5
 * hash key Kinesis uses to place a partition key in a shard (`kinesisKeyGroupOf`). One keyed operator uses one of
 * them everywhere: record routing, keyed state and timers.
 */
export type KeyGroupHash = 'murmur' | 'kinesis-hash';

/** Maps a key to its key group out of `maxParallelism`. */
export type KeyGroupFunction = (key: Key, maxParallelism: number) => number;

/** The key-group function of `hash` (undefined: murmur). Returns the same function object every time. */
export function keyGroupFunction(hash: KeyGroupHash | undefined): KeyGroupFunction {
  return hash === 'kinesis-hash' ? kinesisKeyGroupOf : keyGroupOf;
}
