import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, copyFile, readdir, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SHARED_DIR_NAME, parseSharedFilePath, sharedFilePath } from '../../checkpoint/naming.ts';
import type { SharedStateFileRef, SharedStateStore } from '../../state/index.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../errors.ts';
import { PRIVATE_FILE_MODE, fileSizeAndSha256, fileSizeAndSha256Durably, fsyncDirectory, mkdirPrivate } from './durable-fs.ts';
import { errorCode } from './verified-files.ts';

/**
 * The `shared/` folder of a checkpoint directory (or of a self-contained savepoint): state files that several
 * checkpoints refer to. A file is published by rename after fsync, so it is whole or absent; putting a name that
 * exists replaces it with the same bytes (a retried asynchronous phase puts the same bytes again).
 */
export class SharedStateDirectory implements SharedStateStore {
  private readonly dir: string;
  private durable = false;

  constructor(private readonly root: string) {
    this.dir = join(root, SHARED_DIR_NAME);
  }

  /**
   * Publishes `localPath` as `name`. The local file is taken over: on the same file system it is moved (no copy),
   * across file systems it is copied; either way the caller only deletes it afterwards. The bytes are fsynced and
   * hashed in one pass before the rename that publishes them, and the rename is durable when this resolves.
   */
  async put(name: string, localPath: string): Promise<SharedStateFileRef> {
    const path = sharedFilePath(name);
    const target = join(this.root, path);
    const temp = `${target}.inprogress-${randomBytes(4).toString('hex')}`;
    try {
      await mkdirPrivate(this.dir);
      if (!this.durable) {
        await fsyncDirectory(dirname(this.dir));
        this.durable = true;
      }
      await moveOrCopy(localPath, temp);
      // The local file was made with the state backend's (umask) mode; a published one is private as the rest.
      await chmod(temp, PRIVATE_FILE_MODE);
      const { bytes, sha256 } = await fileSizeAndSha256Durably(temp);
      await rename(temp, target);
      await fsyncDirectory(this.dir);
      return { path, bytes, sha256 };
    } catch (cause) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw new CheckpointIoError('write shared state file', target, cause);
    }
  }

  async get(ref: SharedStateFileRef, localPath: string): Promise<void> {
    const file = this.fileOf(ref.path);
    try {
      await mkdirPrivate(dirname(localPath));
      await rm(localPath, { force: true });
      // A copy, not a hard link: the caller owns the local file and may change it. Reflinks make it free where the
      // file system can share blocks. The copy takes the source's mode; files published before modes were private
      // are made private here (a savepoint copies through this).
      await copyFile(file, localPath, constants.COPYFILE_FICLONE);
      await chmod(localPath, PRIVATE_FILE_MODE);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the shared state file is missing', { cause });
      throw new CheckpointIoError('read shared state file', file, cause);
    }
    const actual = await fileSizeAndSha256(localPath);
    if (actual.bytes !== ref.bytes || actual.sha256 !== ref.sha256) {
      throw new CheckpointCorruptError(file, `it has ${actual.bytes} bytes and another sha256 than the metadata records`);
    }
  }

  /** Storage-relative paths of every published shared file. */
  async list(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return [];
      throw new CheckpointIoError('list shared state files in', this.dir, cause);
    }
    return names.filter((n) => parseSharedFilePath(`${SHARED_DIR_NAME}/${n}`) !== undefined).map((n) => `${SHARED_DIR_NAME}/${n}`);
  }

  /** Deletes shared files; deleting one that is gone is fine. */
  async remove(paths: readonly string[]): Promise<void> {
    for (const path of paths) {
      const file = this.fileOf(path);
      try {
        await unlink(file);
      } catch (cause) {
        if (errorCode(cause) !== 'ENOENT') throw new CheckpointIoError('delete shared state file', file, cause);
      }
    }
  }

  /** Removes `.inprogress-…` leftovers of puts that crashed; only safe when no put is running. */
  async removeTemporary(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return;
      throw new CheckpointIoError('list shared state files in', this.dir, cause);
    }
    for (const name of names) if (name.includes('.inprogress-')) await rm(join(this.dir, name), { force: true });
  }

  private fileOf(path: string): string {
    const name = parseSharedFilePath(path);
    if (name === undefined) throw new CheckpointCorruptError(path, 'the metadata names it as a shared state file, which it cannot be');
    return join(this.dir, name);
  }
}

/** Moves `from` to `to` by rename; copies it (a reflink where the file system can) when they are on different devices. */
async function moveOrCopy(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if (errorCode(error) !== 'EXDEV') throw error;
    await copyFile(from, to, constants.COPYFILE_FICLONE);
  }
}
