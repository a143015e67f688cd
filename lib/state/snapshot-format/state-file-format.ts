import { Packr } from 'msgpackr';
import type { KeyGroupRange } from '../../core/index.ts';
import { StoredStateCorruptError } from './state-errors.ts';

/*
 * Keyed state file, version 1 (backend-neutral: the RocksDB backend writes it, every backend restores from it).
 * All integers big-endian.
 *
 *   File    := Header Block* Footer
 *   Header  := "SLKS" | version u16 | flags u16 (0) | headerLength u32 | header (msgpack StateFileHeader)
 *   Block   := payloadLength u32 (> 0) | crc32(payload) u32 | payload
 *   payload := Row*
 *   Row     := kind u8 (1) | groupKeyLength u16 | groupKey | valueLength u32 | value
 *   Footer  := 0 u32 | rows u64 | blocks u32 | "SLKE"
 *
 * groupKey is the key group (u16) followed by the key bytes (see key-bytes.ts); value is a row (row-codec.ts):
 * every entry of that key, in every state and namespace. A row replaces all earlier state of its key when files
 * are applied in order; valueLength 0 means the key has no state left (a tombstone, only in 'changes' files).
 * State ids in rows are resolved through the header's dictionary.
 *
 * Rows of a 'full' file (a materialisation) are sorted by groupKey; a 'changes' file (a changelog segment) holds
 * the keys changed since the previous file, in the order they must be applied.
 */
export const STATE_FILE_FORMAT_VERSION = 1;
export const STATE_FILE_MAGIC = Buffer.from('SLKS', 'latin1');
export const STATE_FILE_FOOTER_MAGIC = Buffer.from('SLKE', 'latin1');
export const FILE_PREFIX_BYTES = 12;
export const BLOCK_HEADER_BYTES = 8;
export const FOOTER_BYTES = 20;
export const ROW_KIND = 1;
/** Row framing: kind + groupKeyLength + valueLength. */
export const ROW_OVERHEAD_BYTES = 7;
export const MAX_GROUP_KEY_BYTES = 0xffff;

export type StateFileKind = 'full' | 'changes';

export interface StateFileHeader {
  readonly kind: StateFileKind;
  readonly checkpointId: number;
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  /** State id -> name, for every id used by a row of the file. */
  readonly states: readonly (readonly [number, string])[];
}

const headerPackr = new Packr({ useRecords: false });

export function encodeFilePrefix(header: StateFileHeader): Buffer {
  const body = headerPackr.pack({
    kind: header.kind,
    checkpointId: header.checkpointId,
    maxParallelism: header.maxParallelism,
    keyGroupRange: { start: header.keyGroupRange.start, end: header.keyGroupRange.end },
    states: header.states.map(([id, name]) => [id, name]),
  });
  const out = Buffer.allocUnsafe(FILE_PREFIX_BYTES + body.length);
  STATE_FILE_MAGIC.copy(out, 0);
  out.writeUInt16BE(STATE_FILE_FORMAT_VERSION, 4);
  out.writeUInt16BE(0, 6);
  out.writeUInt32BE(body.length, 8);
  out.set(body, FILE_PREFIX_BYTES);
  return out;
}

/** Checks the fixed prefix and returns the header length that follows it. */
export function parseFilePrefix(prefix: Buffer, source: string): number {
  if (prefix.length < FILE_PREFIX_BYTES || !prefix.subarray(0, 4).equals(STATE_FILE_MAGIC)) {
    throw new StoredStateCorruptError(source, 'it does not start with the keyed state file magic "SLKS"');
  }
  const version = prefix.readUInt16BE(4);
  if (version !== STATE_FILE_FORMAT_VERSION) {
    throw new StoredStateCorruptError(
      source,
      `format version ${version} is not supported (this Sluice reads version ${STATE_FILE_FORMAT_VERSION})`,
    );
  }
  return prefix.readUInt32BE(8);
}

export function decodeHeader(body: Buffer, source: string): StateFileHeader {
  let value: unknown;
  try {
    value = headerPackr.unpack(body);
  } catch (cause) {
    throw new StoredStateCorruptError(source, 'its header cannot be decoded', cause);
  }
  const h = value as Partial<StateFileHeader> | null;
  const range = h?.keyGroupRange;
  if (
    h === null ||
    typeof h !== 'object' ||
    (h.kind !== 'full' && h.kind !== 'changes') ||
    !Number.isInteger(h.checkpointId) ||
    !Number.isInteger(h.maxParallelism) ||
    range === undefined ||
    !Number.isInteger(range.start) ||
    !Number.isInteger(range.end) ||
    !Array.isArray(h.states) ||
    !h.states.every((s) => Array.isArray(s) && Number.isInteger(s[0]) && typeof s[1] === 'string')
  ) {
    throw new StoredStateCorruptError(source, 'its header lacks kind, checkpointId, maxParallelism, keyGroupRange or states');
  }
  return h as StateFileHeader;
}
