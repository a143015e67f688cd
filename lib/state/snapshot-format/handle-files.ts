import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, InternalError } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, SharedStateFileRef, SharedStateStore } from '../backend.ts';
import { StateFileReader } from './state-file-reader.ts';

/** Rejects a handle whose key groups cannot line up with this job's. */
export function checkMaxParallelism(handleMaxParallelism: number, maxParallelism: number): void {
  if (handleMaxParallelism !== maxParallelism) {
    throw new ConfigError(
      `cannot restore keyed state written with maxParallelism ${handleMaxParallelism} into a job with ` +
        `maxParallelism ${maxParallelism}: key groups would not line up. Keep maxParallelism unchanged across restores.`,
    );
  }
}

/**
 * Copies each file of `handle` from `store` into `tempDir`, opens it and hands it to `visit`, oldest first (the
 * order they must be applied in), deleting the local copy afterwards. One file is on local disk at a time.
 */
export async function visitHandleFiles(
  handle: FileKeyedStateSnapshot,
  store: SharedStateStore | undefined,
  tempDir: string,
  visit: (reader: StateFileReader, ref: SharedStateFileRef) => Promise<void>,
): Promise<void> {
  if (handle.files.length === 0) return;
  if (store === undefined) {
    throw new InternalError(
      `keyed state of checkpoint ${handle.checkpointId} is in shared state files, but restore was given no store to read them from`,
    );
  }
  await mkdir(tempDir, { recursive: true });
  for (const ref of handle.files) {
    const local = join(tempDir, `restore-${randomBytes(6).toString('hex')}`);
    try {
      await store.get(ref, local);
      const reader = await StateFileReader.open(local, ref.path);
      try {
        await visit(reader, ref);
      } finally {
        await reader.close();
      }
    } finally {
      await rm(local, { force: true });
    }
  }
}
