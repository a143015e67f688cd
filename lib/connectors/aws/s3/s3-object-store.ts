import { fileSizeAndSha256 } from '../../../storage/fs/durable-fs.ts';
import type { ObjectDigest, ObjectStore } from '../../../storage/object-store.ts';
import { isPreconditionFailed, type S3Objects } from './s3-objects.ts';

/**
 * The object-store port over an S3 prefix. PutObject (multipart above the part size) replaces an object whole;
 * objects carry their sha256 as user metadata. Create-if-absent is a PutObject with `If-None-Match: *`, after a
 * HEAD: S3 then refuses a second writer atomically (412/409); on S3-compatible servers that ignore the header
 * (s3rver) the HEAD still refuses a writer that comes after, which is what the emulator tests rely on. Puts leave
 * no temporaries (an unfinished multipart upload is invisible), so `removeTemporary` has nothing to do.
 */
export class S3ObjectStore implements ObjectStore {
  readonly location: string;

  constructor(readonly objects: S3Objects) {
    this.location = objects.url();
  }

  describe(path?: string): string {
    return this.objects.url(path === '' ? undefined : path);
  }

  get(path: string): Promise<Uint8Array | undefined> {
    return this.objects.getBytes(path);
  }

  async size(path: string): Promise<number | undefined> {
    return (await this.objects.head(path))?.bytes;
  }

  digest(path: string): Promise<ObjectDigest | undefined> {
    return this.objects.hash(path);
  }

  put(path: string, data: Uint8Array, sha256?: string): Promise<void> {
    return this.objects.putBytes(path, data, sha256);
  }

  async putIfAbsent(path: string, data: Uint8Array, sha256?: string): Promise<boolean> {
    if ((await this.objects.head(path)) !== undefined) return false;
    try {
      await this.objects.putIfAbsent(path, data, sha256);
      return true;
    } catch (error) {
      if (isPreconditionFailed(error)) return false;
      throw error;
    }
  }

  /** Skips the upload when an object of that name with the same size and sha256 is there already (a retry). */
  async putFile(path: string, localPath: string): Promise<ObjectDigest> {
    const local = await fileSizeAndSha256(localPath);
    const existing = await this.objects.head(path);
    if (existing?.bytes !== local.bytes || existing.sha256 !== local.sha256) {
      await this.objects.putFile(path, localPath, local.sha256);
    }
    return local;
  }

  getFile(path: string, localPath: string): Promise<ObjectDigest | undefined> {
    return this.objects.download(path, localPath);
  }

  list(dir: string): Promise<string[]> {
    return this.objects.listPaths(dir);
  }

  listFolders(dir: string): Promise<string[]> {
    return this.objects.listFolders(dir);
  }

  delete(paths: readonly string[]): Promise<void> {
    return this.objects.deleteMany(paths);
  }

  async deleteFolder(dir: string): Promise<void> {
    await this.objects.deleteMany(await this.objects.listPaths(dir));
  }

  removeTemporary(): Promise<void> {
    return Promise.resolve();
  }
}
