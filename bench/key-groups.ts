/**
 * Key-group functions per record: murmur (keyGroupOf) and kinesis-hash (MD5, kinesisKeyGroupOf), for keys that
 * repeat (accounts: served from the recent-keys cache) and keys that never repeat (each one hashed).
 * `npx tsx bench/key-groups.ts`
 */
import { keyGroupOf, kinesisKeyGroupOf, type Key } from '../lib/core/index.ts';

const repeating = Array.from({ length: 200_000 }, (_, i) => `account-${i % 1000}`);
const distinct = Array.from({ length: 200_000 }, (_, i) => `user-${i}-${(i * 7919) % 100_003}`);

function nsPerKey(fn: (key: Key, m: number) => number, keys: readonly string[]): number {
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (const k of keys) sink += fn(k, 128);
  const ns = Number(process.hrtime.bigint() - t0) / keys.length;
  if (sink < 0) throw new RangeError('unreachable');
  return ns;
}

const rows: Record<string, number[]> = {};
for (let round = 0; round < 5; round++) {
  for (const [name, fn] of [['murmur', keyGroupOf], ['kinesis-hash', kinesisKeyGroupOf]] as const) {
    (rows[`${name} repeating keys`] ??= []).push(nsPerKey(fn, repeating));
    (rows[`${name} distinct keys`] ??= []).push(nsPerKey(fn, distinct));
  }
}
for (const [name, v] of Object.entries(rows)) {
  v.sort((a, b) => a - b);
  console.log(`${name.padEnd(28)} median ${v[2]!.toFixed(0).padStart(5)} ns/key`);
}
