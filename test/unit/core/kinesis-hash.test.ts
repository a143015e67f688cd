import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  MAX_HASH_KEY,
  hashKeyRangeOfKeyGroups,
  hashKeyRangeStringsOfKeyGroups,
  keyGroupFunction,
  keyGroupOf,
  keyGroupOfHashWords,
  hashKeyWords,
  compareHashWords,
  keyGroupOfHashKey,
  keyGroupRangeForSubtask,
  keyGroupsOfHashKeyRange,
  kinesisHashKey,
  kinesisKeyGroupOf,
} from '../../../lib/core/index.ts';

const TWO_POW_128 = 1n << 128n;

describe('kinesis-hash key groups', () => {
  it('hashes the UTF-8 bytes with MD5, big-endian, as Kinesis does', () => {
    for (const key of ['', 'a', 'user-42', 'ключ', '😀 emoji']) {
      const hex = createHash('md5').update(Buffer.from(key, 'utf8')).digest('hex');
      expect(kinesisHashKey(key)).toBe(BigInt(`0x${hex}`));
    }
    // MD5("") = d41d8cd98f00b204e9800998ecf8427e: a known vector, so the byte order cannot silently flip.
    expect(kinesisHashKey('').toString(16)).toBe('d41d8cd98f00b204e9800998ecf8427e');
  });

  it('is floor(h * M / 2^128), exact at the ends of the hash space', () => {
    for (const m of [1, 2, 3, 7, 100, 128, 32768]) {
      expect(keyGroupOfHashKey(0n, m)).toBe(0);
      expect(keyGroupOfHashKey(MAX_HASH_KEY, m)).toBe(m - 1);
    }
    // floor(h * 3 / 2^128) for h around the first boundary ceil(2^128 / 3).
    const b = (TWO_POW_128 + 2n) / 3n;
    expect(keyGroupOfHashKey(b - 1n, 3)).toBe(0);
    expect(keyGroupOfHashKey(b, 3)).toBe(1);
  });

  it('maps numbers as their decimal text and gives the same group as the hash of that text', () => {
    expect(kinesisKeyGroupOf(42, 128)).toBe(kinesisKeyGroupOf('42', 128));
    const h = BigInt(`0x${createHash('md5').update('42').digest('hex')}`);
    expect(kinesisKeyGroupOf('42', 100)).toBe(Number((h * 100n) / TWO_POW_128));
  });

  it('inverts: the hash range of a key-group range holds exactly those groups (M not a power of 2 too)', () => {
    for (const m of [1, 3, 7, 100, 128, 1000]) {
      let expectedFirst = 0n;
      for (let kg = 0; kg < m; kg++) {
        const { first, last } = hashKeyRangeOfKeyGroups({ start: kg, end: kg }, m);
        expect(first).toBe(expectedFirst); // contiguous, no gap, no overlap
        expect(keyGroupOfHashKey(first, m)).toBe(kg);
        expect(keyGroupOfHashKey(last, m)).toBe(kg);
        if (first > 0n) expect(keyGroupOfHashKey(first - 1n, m)).toBe(kg - 1);
        if (last < MAX_HASH_KEY) expect(keyGroupOfHashKey(last + 1n, m)).toBe(kg + 1);
        expectedFirst = last + 1n;
      }
      expect(expectedFirst).toBe(TWO_POW_128);
      const whole = hashKeyRangeStringsOfKeyGroups({ start: 0, end: m - 1 }, m);
      expect(whole).toEqual({ first: '0', last: MAX_HASH_KEY.toString() });
    }
  });

  it('gives each slot of a parallelism the hash range of its key groups', () => {
    const m = 128;
    for (const p of [2, 3]) {
      for (let s = 0; s < p; s++) {
        const range = keyGroupRangeForSubtask(s, p, m);
        const { first, last } = hashKeyRangeOfKeyGroups(range, m);
        expect(keyGroupsOfHashKeyRange(first, last, m)).toEqual(range);
      }
    }
  });

  it('puts random keys in their hash range', () => {
    const m = 100;
    for (let i = 0; i < 2000; i++) {
      const key = `k-${i}`;
      const kg = kinesisKeyGroupOf(key, m);
      const { first, last } = hashKeyRangeOfKeyGroups({ start: kg, end: kg }, m);
      const h = kinesisHashKey(key);
      expect(h >= first && h <= last).toBe(true);
    }
  });

  it('the fast path (32-bit words, no BigInt) equals the exact BigInt formula, at key-group boundaries too', () => {
    for (const m of [1, 3, 7, 100, 128, 1000, 32768]) {
      const probes: bigint[] = [0n, MAX_HASH_KEY];
      for (const kg of [1, Math.floor(m / 3), Math.floor(m / 2), m - 1]) {
        if (kg <= 0 || kg >= m) continue;
        const { first } = hashKeyRangeOfKeyGroups({ start: kg, end: kg }, m);
        probes.push(first - 1n, first, first + 1n);
      }
      for (const h of probes) expect(keyGroupOfHashWords(hashKeyWords(h), m), `h=${h} m=${m}`).toBe(keyGroupOfHashKey(h, m));
      for (let i = 0; i < 3000; i++) {
        const key = `${m}-${i}`;
        expect(kinesisKeyGroupOf(key, m)).toBe(keyGroupOfHashKey(kinesisHashKey(key), m));
      }
    }
    // Cached answers stay right when maxParallelism changes between calls.
    expect(kinesisKeyGroupOf('x', 7)).toBe(keyGroupOfHashKey(kinesisHashKey('x'), 7));
    expect(kinesisKeyGroupOf('x', 1000)).toBe(keyGroupOfHashKey(kinesisHashKey('x'), 1000));
  });

  it('compares hash keys as words like the numbers they are', () => {
    const values = [0n, 1n, 0xffffffffn, 1n << 32n, (1n << 96n) + 5n, MAX_HASH_KEY - 1n, MAX_HASH_KEY];
    for (const a of values) for (const b of values) expect(Math.sign(compareHashWords(hashKeyWords(a), hashKeyWords(b)))).toBe(a < b ? -1 : a > b ? 1 : 0);
  });

  it('keyGroupFunction picks the hash; murmur stays the default', () => {
    expect(keyGroupFunction(undefined)).toBe(keyGroupOf);
    expect(keyGroupFunction('murmur')).toBe(keyGroupOf);
    expect(keyGroupFunction('kinesis-hash')).toBe(kinesisKeyGroupOf);
  });
});
