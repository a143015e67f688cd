/**
 * Keys map to key groups, the unit in which keyed state is stored, snapshotted and redistributed:
 * keyGroup = hash(key) % maxParallelism; subtask = floor(keyGroup * parallelism / maxParallelism).
 * The hash must be identical in every process and across versions: it decides where restored state lives.
 */
export type Key = string | number;

export const DEFAULT_MAX_PARALLELISM = 128;
export const MAX_MAX_PARALLELISM = 32768;

/** MurmurHash3 (x86, 32-bit) over the UTF-16 code units of the key's string form. */
export function murmur3(text: string, seed = 0): number {
  let h = seed >>> 0;
  const len = text.length;
  let i = 0;
  // Two UTF-16 code units form one 32-bit block.
  for (; i + 1 < len; i += 2) {
    let k = (text.charCodeAt(i) & 0xffff) | ((text.charCodeAt(i + 1) & 0xffff) << 16);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < len) {
    let k = text.charCodeAt(i) & 0xffff;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
  }
  h ^= len * 2;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function keyGroupOf(key: Key, maxParallelism: number): number {
  return murmur3(typeof key === 'string' ? key : `#${key}`) % maxParallelism;
}

export function subtaskForKeyGroup(keyGroup: number, parallelism: number, maxParallelism: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** Inclusive range of key groups owned by one subtask. */
export interface KeyGroupRange {
  readonly start: number;
  readonly end: number;
}

export function keyGroupRangeForSubtask(subtask: number, parallelism: number, maxParallelism: number): KeyGroupRange {
  // Inverse of subtaskForKeyGroup: smallest kg with floor(kg*p/m) >= subtask.
  const start = Math.ceil((subtask * maxParallelism) / parallelism);
  const end = Math.ceil(((subtask + 1) * maxParallelism) / parallelism) - 1;
  return { start, end };
}

export function keyGroupRangeContains(range: KeyGroupRange, keyGroup: number): boolean {
  return keyGroup >= range.start && keyGroup <= range.end;
}
