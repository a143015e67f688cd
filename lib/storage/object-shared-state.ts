import { rm } from 'node:fs/promises';
import { SHARED_DIR_NAME, parseSharedFilePath, sharedFilePath } from '../checkpoint/naming.ts';
import type { SharedStateFileRef, SharedStateStore } from '../state/index.ts';
import { CheckpointCorruptError, CheckpointIoError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

/**
 * The `shared/` area of a checkpoint storage (or of a self-contained savepoint): state files that several
 * checkpoints refer to. A put publishes a file whole (the store may move the local file rather than copy it);
 * putting a name again with the same bytes is harmless (a retried asynchronous phase). `get` verifies size and sha256.
 */
export class ObjectSharedState implements SharedStateStore {
  constructor(private readonly store: ObjectStore) {}

  async put(name: string, localPath: string): Promise<SharedStateFileRef> {
    const path = sharedFilePath(name);
    try {
      const { bytes, sha256 } = await this.store.putFile(path, localPath);
      return { path, bytes, sha256 };
    } catch (cause) {
      throw new CheckpointIoError('write shared state file', this.store.describe(path), cause);
    }
  }

  async get(ref: SharedStateFileRef, localPath: string): Promise<void> {
    const where = this.store.describe(checked(ref.path));
    let actual: { bytes: number; sha256: string } | undefined;
    try {
      actual = await this.store.getFile(ref.path, localPath);
    } catch (cause) {
      throw new CheckpointIoError('read shared state file', where, cause);
    }
    if (actual === undefined) throw new CheckpointCorruptError(where, 'the shared state file is missing');
    if (actual.bytes !== ref.bytes || actual.sha256 !== ref.sha256) {
      await rm(localPath, { force: true }).catch(() => undefined);
      throw new CheckpointCorruptError(where, `it has ${actual.bytes} bytes and another sha256 than the metadata records`);
    }
  }

  /** Size of a shared file, undefined when it is missing. */
  async size(path: string): Promise<number | undefined> {
    const where = this.store.describe(checked(path));
    try {
      return await this.store.size(path);
    } catch (cause) {
      throw new CheckpointIoError('inspect shared state file', where, cause);
    }
  }

  /** Storage-relative paths of every published shared file. */
  async list(): Promise<string[]> {
    try {
      return (await this.store.list(SHARED_DIR_NAME)).filter((p) => parseSharedFilePath(p) !== undefined);
    } catch (cause) {
      throw new CheckpointIoError('list shared state files in', this.store.describe(SHARED_DIR_NAME), cause);
    }
  }

  /** Deletes shared files; deleting one that is gone is fine. */
  async remove(paths: readonly string[]): Promise<void> {
    if (paths.length === 0) return;
    for (const path of paths) checked(path);
    try {
      await this.store.delete(paths);
    } catch (cause) {
      throw new CheckpointIoError('delete shared state files in', this.store.describe(SHARED_DIR_NAME), cause);
    }
  }

  /** Removes what crashed puts left; only safe when no put is running. */
  async removeTemporary(): Promise<void> {
    try {
      await this.store.removeTemporary(SHARED_DIR_NAME);
    } catch (cause) {
      throw new CheckpointIoError('remove leftover temporary files in', this.store.describe(SHARED_DIR_NAME), cause);
    }
  }
}

function checked(path: string): string {
  if (parseSharedFilePath(path) === undefined) {
    throw new CheckpointCorruptError(path, 'the metadata names it as a shared state file, which it cannot be');
  }
  return path;
}
