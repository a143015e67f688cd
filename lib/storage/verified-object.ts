import { CheckpointCorruptError, CheckpointIoError } from './errors.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import type { ObjectStore } from './object-store.ts';

/**
 * Reads a task state object whole and checks it against the size and sha256 the metadata records. A missing or
 * different object is a non-retriable CheckpointCorruptError naming `where`; a failed read is a CheckpointIoError.
 */
export async function readVerifiedObject(
  store: ObjectStore,
  object: string,
  where: string,
  expected: { bytes: number; sha256: string },
): Promise<Uint8Array> {
  let data: Uint8Array | undefined;
  try {
    data = await store.get(object);
  } catch (cause) {
    throw new CheckpointIoError('read task state file', where, cause);
  }
  if (data === undefined) throw new CheckpointCorruptError(where, 'the file is missing');
  if (data.byteLength !== expected.bytes) {
    throw new CheckpointCorruptError(where, `it has ${data.byteLength} bytes, the metadata says ${expected.bytes}`);
  }
  if ((await sha256Hex(data)) !== expected.sha256) {
    throw new CheckpointCorruptError(where, 'its sha256 differs from the one recorded in the metadata');
  }
  return data;
}
