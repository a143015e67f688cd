import { Packr } from 'msgpackr';
import type { Bytes } from './key-bytes.ts';
import { packKeepingLoneSurrogates } from './lone-surrogate-strings.ts';
import { StoredStateCorruptError } from './state-errors.ts';

/**
 * All state of one key as one value: a flat array `[stateId, namespace, value, stateId, namespace, value, ...]`,
 * one triple per (state, namespace) entry. Values are in the shared snapshot form (see KeyedStateSnapshot):
 * value/reducing -> the value, aggregating -> the accumulator, list -> an array, map -> an array of
 * [userKey, value] pairs; with TTL each value, list element or map value is a TtlValue `{ v, t }`. State ids are
 * resolved to names by the dictionary of whoever stores the row (a state file's header, a RocksDB dictionary).
 */
export type RowEntries = unknown[];

/** Structured-clone msgpack as in task state files: Map, Set, Date, bigint, undefined, NaN and ±Infinity survive. */
const packr = new Packr({ structuredClone: true, moreTypes: true });

/**
 * Encodes a row; the bytes are a view into the encoder's buffer that stays valid (copy to keep it long). Strings with
 * lone surrogates are kept as they are (lone-surrogate-strings.ts).
 */
export function encodeRow(entries: RowEntries): Bytes {
  return packKeepingLoneSurrogates(packr, entries);
}

export function decodeRow(bytes: Uint8Array, source: string): RowEntries {
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (cause) {
    throw new StoredStateCorruptError(source, 'its msgpack body is damaged', cause);
  }
  if (!Array.isArray(value) || value.length % 3 !== 0) {
    throw new StoredStateCorruptError(source, 'a row is not a list of (state id, namespace, value) triples');
  }
  for (let i = 0; i < value.length; i += 3) {
    if (!Number.isInteger(value[i])) throw new StoredStateCorruptError(source, `a row names state id ${String(value[i])}`);
  }
  return value;
}

/** Number of entries of an encoded row, read from the msgpack array header without decoding the rest. */
export function rowEntryCount(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0;
  const first = bytes[0] as number;
  let length: number;
  if (first >= 0x90 && first <= 0x9f) length = first & 0x0f;
  else if (first === 0xdc) length = ((bytes[1] as number) << 8) | (bytes[2] as number);
  else if (first === 0xdd) {
    length = ((bytes[1] as number) * 0x1000000 + (((bytes[2] as number) << 16) | ((bytes[3] as number) << 8) | (bytes[4] as number)));
  } else {
    throw new StoredStateCorruptError('a state row', `it starts with byte 0x${first.toString(16)}, not a msgpack array`);
  }
  return length / 3;
}
