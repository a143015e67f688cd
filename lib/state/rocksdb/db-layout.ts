import { Packr } from 'msgpackr';
import type { SharedStateFileRef } from '../backend.ts';
import type { Bytes } from '../snapshot-format/key-bytes.ts';
import { StoredStateCorruptError } from '../snapshot-format/state-errors.ts';

/*
 * The backend's RocksDB key space, by first byte:
 *   0x00-0x7f  main area      keyGroup u16 | key bytes          -> row (all state of the key)
 *   0xfd       timer index    0xfd | domain | timestamp | ... -> see timer-index.ts (not state: rebuilt on restore)
 *   0xfe       overflow area  0xfe | generation u32 | keyGroup | key -> row, or empty = the key has no state
 *   0xff       metadata       0xff 'S' id u16 -> state name;  0xff 'K' checkpoint -> recovery marker
 * Key groups are below 32768, so the main area ends before 0x80 and one key-group range is one contiguous scan.
 * How the areas implement incremental checkpoints and local recovery: docs/state.md.
 */
export const MAIN_START: Bytes = Buffer.from([0x00]);
export const MAIN_END: Bytes = Buffer.from([0x80]);
export const OVERFLOW_PREFIX = 0xfe;
export const OVERFLOW_HEADER_BYTES = 5;
const META_PREFIX = 0xff;
const STATE_NAME = 0x53;
const MARKER = 0x4b;

export function overflowKey(generation: number, groupKey: Uint8Array): Bytes {
  const out = Buffer.allocUnsafe(OVERFLOW_HEADER_BYTES + groupKey.length);
  out[0] = OVERFLOW_PREFIX;
  out.writeUInt32BE(generation, 1);
  out.set(groupKey, OVERFLOW_HEADER_BYTES);
  return out;
}

/** [gte, lt) of the overflow rows of generations first..last. */
export function overflowRange(first: number, last: number): [Bytes, Bytes] {
  const gte = Buffer.allocUnsafe(OVERFLOW_HEADER_BYTES);
  gte[0] = OVERFLOW_PREFIX;
  gte.writeUInt32BE(first, 1);
  const lt = Buffer.allocUnsafe(OVERFLOW_HEADER_BYTES);
  if (last >= 0xffffffff) {
    lt[0] = OVERFLOW_PREFIX + 1;
    lt.fill(0, 1);
  } else {
    lt[0] = OVERFLOW_PREFIX;
    lt.writeUInt32BE(last + 1, 1);
  }
  return [gte, lt];
}

export function overflowGeneration(key: Uint8Array): number {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).readUInt32BE(1);
}

export function stateNameKey(id: number): Bytes {
  const out = Buffer.allocUnsafe(4);
  out[0] = META_PREFIX;
  out[1] = STATE_NAME;
  out.writeUInt16BE(id, 2);
  return out;
}

export function stateNameRange(): [Bytes, Bytes] {
  return [Buffer.from([META_PREFIX, STATE_NAME]), Buffer.from([META_PREFIX, STATE_NAME + 1])];
}

export function stateIdOfNameKey(key: Uint8Array): number {
  return ((key[2] as number) << 8) | (key[3] as number);
}

const MARKER_OFFSET = 2n ** 63n;

export function markerKey(checkpointId: number): Bytes {
  const out = Buffer.allocUnsafe(10);
  out[0] = META_PREFIX;
  out[1] = MARKER;
  out.writeBigUInt64BE(BigInt(checkpointId) + MARKER_OFFSET, 2);
  return out;
}

/** [gte, lt) of the markers of checkpoints below `checkpointId` (all markers when undefined). */
export function markerRange(belowCheckpointId?: number): [Bytes, Bytes] {
  const gte = Buffer.from([META_PREFIX, MARKER]);
  return [gte, belowCheckpointId === undefined ? Buffer.from([META_PREFIX, MARKER + 1]) : markerKey(belowCheckpointId)];
}

/**
 * Written in the same batch as the state of checkpoint `checkpointId` (the synchronous phase): the DB then holds
 * exactly that state in the main area plus overflow generations up to `sealedGeneration`. `files` is added once the
 * checkpoint's files are written, and is what a restore compares with the handle it is given.
 */
export interface RecoveryMarker {
  readonly checkpointId: number;
  readonly sealedGeneration: number;
  readonly keyGroupStart: number;
  readonly keyGroupEnd: number;
  readonly maxParallelism: number;
  readonly entryCount: number;
  /** Pending event-time and processing-time timers (rows hold them; RocksDbTimerService counts them). */
  readonly timers?: readonly [number, number] | undefined;
  readonly files?: readonly SharedStateFileRef[] | undefined;
}

const markerPackr = new Packr({ useRecords: false });

/**
 * On disk the sealed generation keeps its original field name, `sealedEpoch` (generations were called overflow
 * epochs before "epoch" came to mean fencing), so databases written before and after the rename read alike.
 */
interface StoredRecoveryMarker extends Omit<RecoveryMarker, 'sealedGeneration'> {
  readonly sealedEpoch: number;
}

export function encodeMarker(marker: RecoveryMarker): Bytes {
  const { sealedGeneration, ...rest } = marker;
  return markerPackr.pack({ ...rest, sealedEpoch: sealedGeneration } satisfies StoredRecoveryMarker);
}

export function decodeMarker(bytes: Uint8Array, source: string): RecoveryMarker {
  let value: unknown;
  try {
    value = markerPackr.unpack(bytes);
  } catch (cause) {
    throw new StoredStateCorruptError(source, 'a recovery marker cannot be decoded', cause);
  }
  const m = value as Partial<StoredRecoveryMarker> | null;
  if (m === null || typeof m !== 'object' || !Number.isInteger(m.checkpointId) || !Number.isInteger(m.sealedEpoch)) {
    throw new StoredStateCorruptError(source, 'a recovery marker lacks checkpointId or sealedEpoch');
  }
  const { sealedEpoch, ...rest } = m as StoredRecoveryMarker;
  return { ...rest, sealedGeneration: sealedEpoch };
}
