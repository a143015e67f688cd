import { mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SHARED_DIR_NAME, parseSharedFilePath, sharedFilePath } from '../../../checkpoint/naming.ts';
import type { SharedStateFileRef, SharedStateStore } from '../../../state/index.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../../../storage/errors.ts';
import { fileSizeAndSha256 } from '../../../storage/fs/durable-fs.ts';
import type { S3Objects } from './s3-objects.ts';

/**
 * The `shared/` area of S3 checkpoint storage: state files several checkpoints refer to. `put` streams a local
 * file up (multipart when larger than the part size) and skips the upload when an object of that name with the
 * same size and sha256 is there already (a retried asynchronous phase). `get` streams it down and verifies it.
 */
export class S3SharedStateStore implements SharedStateStore {
  constructor(private readonly objects: S3Objects) {}

  async put(name: string, localPath: string): Promise<SharedStateFileRef> {
    const path = sharedFilePath(name);
    const url = this.objects.url(path);
    let local: { bytes: number; sha256: string };
    try {
      local = await fileSizeAndSha256(localPath);
    } catch (cause) {
      throw new CheckpointIoError('read the local state file', localPath, cause);
    }
    try {
      const existing = await this.objects.head(path);
      if (existing?.bytes !== local.bytes || existing.sha256 !== local.sha256) {
        await this.objects.putFile(path, localPath, local.sha256);
      }
    } catch (cause) {
      throw new CheckpointIoError('write shared state file', url, cause);
    }
    return { path, bytes: local.bytes, sha256: local.sha256 };
  }

  async get(ref: SharedStateFileRef, localPath: string): Promise<void> {
    const url = this.objects.url(this.checked(ref.path));
    let actual: { bytes: number; sha256: string } | undefined;
    try {
      await mkdir(dirname(localPath), { recursive: true });
      actual = await this.objects.download(ref.path, localPath);
    } catch (cause) {
      throw new CheckpointIoError('read shared state file', url, cause);
    }
    if (actual === undefined) throw new CheckpointCorruptError(url, 'the shared state file is missing');
    if (actual.bytes !== ref.bytes || actual.sha256 !== ref.sha256) {
      await rm(localPath, { force: true }).catch(() => undefined);
      throw new CheckpointCorruptError(url, `it has ${actual.bytes} bytes and another sha256 than the metadata records`);
    }
  }

  /** Size of a shared file, undefined when it is missing. */
  async size(path: string): Promise<number | undefined> {
    const url = this.objects.url(this.checked(path));
    try {
      return (await this.objects.head(path))?.bytes;
    } catch (cause) {
      throw new CheckpointIoError('inspect shared state file', url, cause);
    }
  }

  /** Storage-relative paths of every shared file. */
  async list(): Promise<string[]> {
    try {
      return (await this.objects.listPaths(SHARED_DIR_NAME)).filter((p) => parseSharedFilePath(p) !== undefined);
    } catch (cause) {
      throw new CheckpointIoError('list shared state files in', this.objects.url(SHARED_DIR_NAME), cause);
    }
  }

  /** Deletes shared files; deleting one that is gone is fine. */
  async remove(paths: readonly string[]): Promise<void> {
    if (paths.length === 0) return;
    for (const path of paths) this.checked(path);
    try {
      await this.objects.deleteMany(paths);
    } catch (cause) {
      throw new CheckpointIoError('delete shared state files in', this.objects.url(SHARED_DIR_NAME), cause);
    }
  }

  private checked(path: string): string {
    if (parseSharedFilePath(path) === undefined) {
      throw new CheckpointCorruptError(path, 'the metadata names it as a shared state file, which it cannot be');
    }
    return path;
  }
}
