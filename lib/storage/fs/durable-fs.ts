import { createHash } from 'node:crypto';
import { mkdir, open, type FileHandle } from 'node:fs/promises';

/**
 * Checkpoints and savepoints hold the job's data (state, keys, records in flight): files are readable by their owner
 * only, as `umask 077` would make them, whatever the process's umask. Folders that already exist keep their mode.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** `mkdir -p` whose new folders (the last one and any parents it creates) are private to their owner. */
export async function mkdirPrivate(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** Writes `data` to a new private file and fsyncs it, so a later rename publishes bytes that are on disk. */
export async function writeFileDurably(path: string, data: Uint8Array): Promise<void> {
  const handle = await open(path, 'wx', PRIVATE_FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Makes a directory's entries (renames, new files, new subdirectories) durable. Windows cannot open a directory for
 * fsync; there the rename itself is as durable as the platform allows.
 */
export async function fsyncDirectory(path: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const HASH_SLICE = 8 * 1024 * 1024;

/** Hex SHA-256 of bytes in memory; yields between slices so hashing a large snapshot does not stall the thread. */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const hash = createHash('sha256');
  for (let offset = 0; offset < data.byteLength; offset += HASH_SLICE) {
    if (offset > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    hash.update(data.subarray(offset, offset + HASH_SLICE));
  }
  return hash.digest('hex');
}

const READ_SLICE = 4 * 1024 * 1024;

/**
 * Size and hex SHA-256 of a file, and makes its bytes durable: the fsync runs while the file is read and hashed
 * (the disk flush and the hashing overlap), one open for both.
 */
export async function fileSizeAndSha256Durably(path: string): Promise<{ bytes: number; sha256: string }> {
  // Opened for writing too: some platforms (Windows) refuse to flush a handle opened read-only.
  const handle = await open(path, 'r+');
  try {
    const [digest] = await Promise.all([hashOpenFile(handle), handle.sync()]);
    return digest;
  } finally {
    await handle.close();
  }
}

async function hashOpenFile(handle: FileHandle): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(READ_SLICE);
  let bytes = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, bytes);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    bytes += bytesRead;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** Size and hex SHA-256 of a file, read in slices so verifying a checkpoint does not load it into memory. */
export async function fileSizeAndSha256(path: string): Promise<{ bytes: number; sha256: string }> {
  const handle = await open(path, 'r');
  try {
    return await hashOpenFile(handle);
  } finally {
    await handle.close();
  }
}
