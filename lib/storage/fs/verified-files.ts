import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SHARED_DIR_NAME, parseSharedFilePath } from '../../checkpoint/naming.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../errors.ts';
import { sha256Hex } from './durable-fs.ts';

/** The errno code of a file system error (ENOENT, EXDEV, ...), if it has one. */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as NodeJS.ErrnoException).code : undefined;
}

/**
 * Reads a task state file whole and checks it against the size and sha256 the metadata records: a missing or
 * different file is a CheckpointCorruptError (not retriable), a failed read a CheckpointIoError.
 */
export async function readVerifiedTaskFile(file: string, expected: { readonly bytes: number; readonly sha256: string }): Promise<Buffer> {
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the file is missing', { cause });
    throw new CheckpointIoError('read task state file', file, cause);
  }
  if (data.length !== expected.bytes) {
    throw new CheckpointCorruptError(file, `it has ${data.length} bytes, the metadata says ${expected.bytes}`);
  }
  if ((await sha256Hex(data)) !== expected.sha256) {
    throw new CheckpointCorruptError(file, 'its sha256 differs from the one recorded in the metadata');
  }
  return data;
}

/**
 * Checks the size of a shared state file the metadata lists by its storage-relative `path`, in the `shared/`
 * folder under `root`; the path must follow the naming scheme.
 */
export async function verifySharedFileSize(root: string, path: string, bytes: number): Promise<void> {
  const name = parseSharedFilePath(path);
  if (name === undefined) throw new CheckpointCorruptError(path, 'the metadata names it as a shared state file, which it cannot be');
  const file = join(root, SHARED_DIR_NAME, name);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the shared state file is missing', { cause });
    throw new CheckpointIoError('verify shared state file', file, cause);
  }
  if (size !== bytes) throw new CheckpointCorruptError(file, `it has ${size} bytes, the metadata says ${bytes}`);
}
