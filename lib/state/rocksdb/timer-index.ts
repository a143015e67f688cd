import { decodeGroupKey, decodeKey, encodeKeyWithPrefix, type Bytes } from '../snapshot-format/key-bytes.ts';
import type { Namespace } from '../keyed-state.ts';
import type { Timer, TimerDomain } from '../timer-state.ts';

/*
 * The timer index: 0xfd | domain u8 | timestamp (8 bytes, ordered as numbers) | groupKey length u16 | groupKey |
 * namespace bytes -> empty, or the timer's real timestamp (8 bytes, f64 BE) when the entry was placed later than
 * it (a timer registered for a time the service had already scanned past). Timers are ordered by time across
 * all key groups, so the due ones are one forward scan. The index is not state: the key's row
 * (timer-state.ts) is authoritative and the index may hold stale entries; see RocksDbTimerService.
 */
export const TIMER_INDEX_PREFIX = 0xfd;
const HEADER_BYTES = 12;
const TS_OFFSET = 2;

export function domainByte(domain: TimerDomain): number {
  return domain === 'event' ? 0 : 1;
}

/** Smallest double above `x` (for +Infinity and NaN: itself). */
export function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY) return x;
  if (x === 0) return Number.MIN_VALUE;
  scratch[0] = x;
  bits[0] = bits[0]! + (x > 0 ? 1n : -1n);
  return scratch[0];
}

const scratch = new Float64Array(1);
const bits = new BigInt64Array(scratch.buffer);

/** Big-endian IEEE 754 with the sign flipped (and the rest inverted for negatives): byte order = numeric order. */
function writeOrderedDouble(out: Buffer, offset: number, value: number): void {
  out.writeDoubleBE(value === 0 ? 0 : value, offset);
  if (((out[offset] as number) & 0x80) !== 0) {
    for (let i = offset; i < offset + 8; i++) out[i] = ~(out[i] as number) & 0xff;
  } else {
    out[offset] = (out[offset] as number) | 0x80;
  }
}

const readScratch = Buffer.allocUnsafe(8);

function readOrderedDouble(bytes: Buffer, offset: number): number {
  const copy = readScratch;
  bytes.copy(copy, 0, offset, offset + 8);
  if (((copy[0] as number) & 0x80) !== 0) copy[0] = (copy[0] as number) & 0x7f;
  else for (let i = 0; i < 8; i++) copy[i] = ~(copy[i] as number) & 0xff;
  return copy.readDoubleBE(0);
}

/** [0xfd, domain, ordered timestamp]: the start of `timestamp`'s entries. */
export function indexPosition(domain: TimerDomain, timestamp: number): Bytes {
  const out = Buffer.allocUnsafe(TS_OFFSET + 8);
  out[0] = TIMER_INDEX_PREFIX;
  out[1] = domainByte(domain);
  writeOrderedDouble(out, TS_OFFSET, timestamp);
  return out;
}

/** Start of a domain's entries. */
export function domainStart(domain: TimerDomain): Bytes {
  return Buffer.from([TIMER_INDEX_PREFIX, domainByte(domain)]);
}

/** End (exclusive) of the entries with timestamp <= `limit`. */
export function indexEnd(domain: TimerDomain, limit: number): Bytes {
  if (limit === Number.POSITIVE_INFINITY) return Buffer.from([TIMER_INDEX_PREFIX, domainByte(domain) + 1]);
  return indexPosition(domain, nextUp(limit));
}

/** The timestamp at an index position (or entry key); -Infinity for a bare domain start. */
export function positionTimestamp(position: Bytes): number {
  return position.length < TS_OFFSET + 8 ? Number.NEGATIVE_INFINITY : readOrderedDouble(position, TS_OFFSET);
}

/**
 * Where to index a timer whose own position is below `position` (already scanned): just above it, or at +Infinity
 * once a pop scanned the whole domain.
 */
export function placementAbove(domain: TimerDomain, position: Bytes): number {
  if (position.length < TS_OFFSET + 8 && position[1] !== domainByte(domain)) return Number.POSITIVE_INFINITY;
  return nextUp(positionTimestamp(position));
}

/** The smallest key after `key`. */
export function after(key: Bytes): Bytes {
  const out = Buffer.allocUnsafe(key.length + 1);
  key.copy(out, 0);
  out[key.length] = 0;
  return out;
}

export function indexKey(domain: TimerDomain, placedAt: number, groupKey: Bytes, namespace: Namespace): Bytes {
  const ns = encodeKeyWithPrefix(namespace, HEADER_BYTES + groupKey.length);
  ns[0] = TIMER_INDEX_PREFIX;
  ns[1] = domainByte(domain);
  writeOrderedDouble(ns, TS_OFFSET, placedAt);
  ns.writeUInt16BE(groupKey.length, TS_OFFSET + 8);
  groupKey.copy(ns, HEADER_BYTES);
  return ns;
}

const EMPTY: Bytes = Buffer.alloc(0);

/** The entry value: empty when the entry sits at the timer's own timestamp, else that timestamp. */
export function indexValue(timestamp: number, placedAt: number): Bytes {
  if (timestamp === placedAt) return EMPTY;
  const out = Buffer.allocUnsafe(8);
  out.writeDoubleBE(timestamp, 0);
  return out;
}

/** The timer an index entry stands for (its row decides whether it is still pending). */
export function decodeIndexEntry(entryKey: Buffer, value: Buffer | undefined): Timer {
  const timestamp = value !== undefined && value.length === 8 ? value.readDoubleBE(0) : readOrderedDouble(entryKey, TS_OFFSET);
  const groupKeyEnd = HEADER_BYTES + entryKey.readUInt16BE(TS_OFFSET + 8);
  return {
    timestamp,
    key: decodeGroupKey(entryKey, HEADER_BYTES, groupKeyEnd),
    namespace: decodeKey(entryKey, groupKeyEnd, entryKey.length),
  };
}
