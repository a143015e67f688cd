import { constants as bufferConstants } from 'node:buffer';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import { packKeepingLoneSurrogates } from '../state/snapshot-format/lone-surrogate-strings.ts';
import { CheckpointCorruptError, StateEncodeError } from './errors.ts';
import type { TaskSnapshot } from './task-snapshot.ts';

/*
 * Task state file layout (all integers big-endian):
 *   0  magic    4 bytes  "SLTS"
 *   4  version  u16      TASK_STATE_FORMAT_VERSION
 *   6  flags    u16      0 (reserved)
 *   8  length   u64      byte length of the body
 *  16  body     msgpackr (structured clone: Map, Set, Date, bigint, undefined, ±Infinity, NaN survive; -0 becomes 0)
 *  end crc32    u32      over everything before it
 * The length catches truncation and trailing garbage; the CRC catches every single-byte change, so a file is
 * self-verifying even when read without the metadata's sha256.
 */
const MAGIC = Buffer.from('SLTS', 'latin1');
export const TASK_STATE_FORMAT_VERSION = 1;
const HEADER_BYTES = 16;
const TRAILER_BYTES = 4;
const MAX_LENGTH = bufferConstants.MAX_LENGTH;

// Records are defined inline in each message (no shared structures), so every file decodes on its own.
const packr = new Packr({ structuredClone: true, moreTypes: true });

/** From this expected size on, the encoder's buffer is allocated up front (see EncodeOptions.sizeHint). */
const PRESIZE_FROM_BYTES = 16 * 1024 * 1024;

export interface EncodeOptions {
  /**
   * Expected encoded size, e.g. that of the task's previous snapshot. msgpackr grows its buffer in steps of 25%,
   * each step copying everything encoded so far: about five copies of a 1 GB snapshot, which made encoding several
   * times slower than writing once. A buffer of about the expected size up front avoids them; a wrong guess only
   * costs the growth it would have had anyway.
   */
  readonly sizeHint?: number;
}

export function encodeTaskSnapshot(snapshot: TaskSnapshot, options: EncodeOptions = {}): Uint8Array {
  const hint = options.sizeHint ?? 0;
  if (hint >= PRESIZE_FROM_BYTES) {
    packr.useBuffer(Buffer.allocUnsafe(Math.min(Math.ceil(hint * 1.05) + 65_536, MAX_LENGTH)));
  }
  let body: Uint8Array;
  try {
    // Strings with lone surrogates survive (as a msgpack extension); see lone-surrogate-strings.ts.
    body = packKeepingLoneSurrogates(packr, snapshot);
  } catch (cause) {
    throw new StateEncodeError(`task ${snapshot.vertex}-${snapshot.subtask}`, cause);
  } finally {
    // msgpackr keeps encoding into its last buffer; a large one would stay in memory until the next checkpoint.
    if (hint >= PRESIZE_FROM_BYTES || packr.offset >= PRESIZE_FROM_BYTES) packr.useBuffer(Buffer.allocUnsafeSlow(8192));
  }
  const out = Buffer.allocUnsafe(HEADER_BYTES + body.length + TRAILER_BYTES);
  MAGIC.copy(out, 0);
  out.writeUInt16BE(TASK_STATE_FORMAT_VERSION, 4);
  out.writeUInt16BE(0, 6);
  out.writeBigUInt64BE(BigInt(body.length), 8);
  out.set(body, HEADER_BYTES);
  const end = HEADER_BYTES + body.length;
  out.writeUInt32BE(crc32(out.subarray(0, end)), end);
  return out;
}

/** Decodes a task state file; `source` names the file in errors. Throws CheckpointCorruptError on any damage. */
export function decodeTaskSnapshot(bytes: Uint8Array, source = 'task state'): TaskSnapshot {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < HEADER_BYTES + TRAILER_BYTES) {
    throw new CheckpointCorruptError(source, `only ${buf.length} bytes, shorter than the format's header`);
  }
  if (!buf.subarray(0, 4).equals(MAGIC)) {
    throw new CheckpointCorruptError(source, 'it does not start with the task state magic "SLTS"');
  }
  const version = buf.readUInt16BE(4);
  if (version !== TASK_STATE_FORMAT_VERSION) {
    throw new CheckpointCorruptError(
      source,
      `format version ${version} is not supported (this Sluice reads version ${TASK_STATE_FORMAT_VERSION})`,
    );
  }
  const bodyLength = buf.readBigUInt64BE(8);
  const expectedTotal = BigInt(HEADER_BYTES + TRAILER_BYTES) + bodyLength;
  if (expectedTotal !== BigInt(buf.length)) {
    throw new CheckpointCorruptError(
      source,
      `the header announces ${expectedTotal} bytes but the file has ${buf.length} (truncated or overwritten)`,
    );
  }
  const end = buf.length - TRAILER_BYTES;
  if (crc32(buf.subarray(0, end)) !== buf.readUInt32BE(end)) {
    throw new CheckpointCorruptError(source, 'its CRC-32 does not match its contents');
  }
  let value: unknown;
  try {
    value = packr.unpack(buf.subarray(HEADER_BYTES, end));
  } catch (cause) {
    throw new CheckpointCorruptError(source, 'its body cannot be decoded', { cause });
  }
  return checkShape(value, source);
}

function checkShape(value: unknown, source: string): TaskSnapshot {
  if (typeof value !== 'object' || value === null) {
    throw new CheckpointCorruptError(source, 'its body is not a task snapshot');
  }
  const v = value as Partial<TaskSnapshot>;
  if (!Number.isInteger(v.vertex) || !Number.isInteger(v.subtask) || !Array.isArray(v.operators)) {
    throw new CheckpointCorruptError(source, 'its body lacks vertex, subtask or operators');
  }
  for (const op of v.operators) {
    if (typeof op !== 'object' || op === null || !Number.isInteger(op.nodeId) || typeof op.watermark !== 'number') {
      throw new CheckpointCorruptError(source, 'an operator entry lacks nodeId or watermark');
    }
  }
  return value as TaskSnapshot;
}
