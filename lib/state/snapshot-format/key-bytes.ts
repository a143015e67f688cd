import { InternalError, type Key } from '../../core/index.ts';

/*
 * A key as bytes: one tag byte, then its text. Numbers use their String() form (the same text keyGroupOf hashes,
 * and -0 becomes "0" as in a Map), so 1 and "1" differ by tag and equal keys always give equal bytes. Strings
 * that are not well-formed UTF-16 (lone surrogates) would lose information in UTF-8, so they are stored as
 * UTF-16LE under their own tag.
 */
const TAG_STRING = 0x73; // 's'
const TAG_NUMBER = 0x6e; // 'n'
const TAG_UTF16 = 0x75; // 'u'

/** Buffer.from/alloc are typed as Buffer<ArrayBufferLike>; this keeps signatures short. */
export type Bytes = Buffer;

const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Writes `key` after `prefixLength` bytes that the caller fills (key group, area prefix). Returns the whole
 * buffer: prefix + tag + text.
 */
export function encodeKeyWithPrefix(key: Key, prefixLength: number): Bytes {
  if (typeof key === 'number') {
    const text = String(key);
    const out = Buffer.allocUnsafe(prefixLength + 1 + text.length);
    out[prefixLength] = TAG_NUMBER;
    out.write(text, prefixLength + 1, 'latin1');
    return out;
  }
  if (isWellFormed(key)) {
    const length = Buffer.byteLength(key, 'utf8');
    const out = Buffer.allocUnsafe(prefixLength + 1 + length);
    out[prefixLength] = TAG_STRING;
    out.write(key, prefixLength + 1, 'utf8');
    return out;
  }
  const out = Buffer.allocUnsafe(prefixLength + 1 + key.length * 2);
  out[prefixLength] = TAG_UTF16;
  out.write(key, prefixLength + 1, 'utf16le');
  return out;
}

/** The key stored in `bytes[start, end)` (tag included). */
export function decodeKey(bytes: Uint8Array, start: number, end: number): Key {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = buf[start];
  switch (tag) {
    case TAG_STRING:
      return buf.toString('utf8', start + 1, end);
    case TAG_NUMBER:
      return Number(buf.toString('latin1', start + 1, end));
    case TAG_UTF16:
      return buf.toString('utf16le', start + 1, end);
    default:
      throw new InternalError(`stored key has an unknown tag byte ${String(tag)}`);
  }
}

/*
 * A "group key" is the key group (u16, big-endian) followed by the key bytes: the unit in which state files and the
 * RocksDB backend store one key's state. Sorting group keys as bytes sorts by key group first, so a key-group
 * range is one contiguous run.
 */
export const KEY_GROUP_BYTES = 2;

export function encodeGroupKey(keyGroup: number, key: Key, prefixLength = 0): Bytes {
  const out = encodeKeyWithPrefix(key, prefixLength + KEY_GROUP_BYTES);
  out.writeUInt16BE(keyGroup, prefixLength);
  return out;
}

export function groupKeyKeyGroup(groupKey: Uint8Array, offset = 0): number {
  return ((groupKey[offset] as number) << 8) | (groupKey[offset + 1] as number);
}

export function decodeGroupKey(groupKey: Uint8Array, offset = 0, end = groupKey.length): Key {
  return decodeKey(groupKey, offset + KEY_GROUP_BYTES, end);
}
