import { randomBytes } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { chmod, copyFile, link, mkdir, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import type { ObjectDigest, ObjectStore } from '../object-store.ts';
import {
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
  fileSizeAndSha256,
  fileSizeAndSha256Durably,
  fsyncDirectory,
  writeFileDurably,
} from './durable-fs.ts';
import { errorCode } from './verified-files.ts';

/** Files being written carry this marker until their rename; any left over are crash debris. */
export const IN_PROGRESS_MARK = '.inprogress';

/** link(2) failures that mean the file system has no hard links (not that the target exists). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/** `Dirent.parentPath` arrived in Node 20.12; earlier 20.x releases name it `path`. */
function parentOf(entry: Dirent): string {
  const legacy = entry as Dirent & { path?: string };
  return entry.parentPath ?? legacy.path ?? '';
}

function isTemporary(name: string): boolean {
  return name.includes(IN_PROGRESS_MARK);
}

/**
 * Objects as files under a local folder (or a mounted file system such as EFS). A put writes a private temporary
 * file beside the target (`<name>.inprogress-<hex>`), fsyncs it, renames it into place and fsyncs the folder, so an
 * object is whole or absent and durable once the put resolves. Create-if-absent publishes the temporary with
 * link(2), which fails when the target exists: of two writers exactly one wins, as with rename-free O_EXCL.
 * Files and folders are private to their owner (see durable-fs.ts).
 */
export class FsObjectStore implements ObjectStore {
  readonly location: string;
  readonly root: string;
  /** Whether the root's own entry in its parent has been fsynced (the root may have been created by the first put). */
  private rootDurable = false;

  constructor(dir: string) {
    if (dir === '') throw new ConfigError('the checkpoint directory must not be empty; pass --checkpoint-dir DIR');
    this.location = dir;
    this.root = resolve(dir);
  }

  describe(path?: string): string {
    return path === undefined || path === '' ? this.root : join(this.root, ...path.split('/'));
  }

  async get(path: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.describe(path));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  async size(path: string): Promise<number | undefined> {
    try {
      return (await stat(this.describe(path))).size;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  async digest(path: string): Promise<ObjectDigest | undefined> {
    try {
      return await fileSizeAndSha256(this.describe(path));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  async put(path: string, data: Uint8Array): Promise<void> {
    const target = this.describe(path);
    const temp = temporaryBeside(target);
    try {
      await this.ensureFolder(dirname(target));
      await writeFileDurably(temp, data);
      await rename(temp, target);
      await fsyncDirectory(dirname(target));
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  }

  async putIfAbsent(path: string, data: Uint8Array): Promise<boolean> {
    const target = this.describe(path);
    const temp = temporaryBeside(target);
    try {
      await this.ensureFolder(dirname(target));
      await writeFileDurably(temp, data);
      try {
        await link(temp, target);
      } catch (error) {
        if (errorCode(error) === 'EEXIST') return false;
        if (!NO_HARD_LINKS.has(errorCode(error) ?? '')) throw error;
        // exFAT, vboxsf, many SMB and FUSE mounts have no hard links. There a check then a rename is as safe as
        // the job's writes were before: the folder lock (sluice.lock) keeps every other writer out.
        if ((await this.size(path)) !== undefined) return false;
        await rename(temp, target);
      }
      await fsyncDirectory(dirname(target));
      return true;
    } finally {
      await rm(temp, { force: true }).catch(() => undefined);
    }
  }

  async putFile(path: string, localPath: string): Promise<ObjectDigest> {
    const target = this.describe(path);
    const temp = temporaryBeside(target);
    try {
      await this.ensureFolder(dirname(target));
      await moveOrCopy(localPath, temp);
      // The local file was made with the writer's (umask) mode; a published one is private as the rest.
      await chmod(temp, PRIVATE_FILE_MODE);
      const digest = await fileSizeAndSha256Durably(temp);
      await rename(temp, target);
      await fsyncDirectory(dirname(target));
      return digest;
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  }

  async getFile(path: string, localPath: string): Promise<ObjectDigest | undefined> {
    const source = this.describe(path);
    try {
      await mkdir(dirname(localPath), { recursive: true, mode: PRIVATE_DIR_MODE });
      await rm(localPath, { force: true });
      // A copy, not a hard link: the caller owns the local file and may change it. Reflinks make it free where the
      // file system can share blocks. Files published before modes were private are made private here.
      await copyFile(source, localPath, constants.COPYFILE_FICLONE);
      await chmod(localPath, PRIVATE_FILE_MODE);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' && (await this.size(path)) === undefined) return undefined;
      throw error;
    }
    return fileSizeAndSha256(localPath);
  }

  async list(dir: string): Promise<string[]> {
    const base = this.describe(dir);
    let entries: Dirent[];
    try {
      entries = await readdir(base, { recursive: true, withFileTypes: true });
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
    const files: string[] = [];
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const file = join(parentOf(entry), entry.name);
      if (relative(base, file).split(sep).some(isTemporary)) continue;
      files.push(relative(this.root, file).split(sep).join('/'));
    }
    return files;
  }

  async listFolders(dir: string): Promise<string[]> {
    try {
      const entries = await readdir(this.describe(dir), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory() && !isTemporary(e.name)).map((e) => e.name);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
  }

  async delete(paths: readonly string[]): Promise<void> {
    for (const path of paths) {
      try {
        await unlink(this.describe(path));
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
      }
    }
  }

  async deleteFolder(dir: string): Promise<void> {
    await rm(this.describe(dir), { recursive: true, force: true });
  }

  async removeTemporary(dir: string): Promise<void> {
    const base = this.describe(dir);
    let entries: string[];
    try {
      entries = await readdir(base, { recursive: true });
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return;
      throw error;
    }
    // Deepest first, so a temporary folder's contents go before (with) the folder.
    for (const entry of entries.filter((e) => isTemporary(e.split(sep).pop() ?? '')).sort((a, b) => b.length - a.length)) {
      await rm(join(base, entry), { recursive: true, force: true });
    }
  }

  /**
   * `mkdir -p` with private new folders; the entries of folders it creates are fsynced into their parents, and the
   * root's own entry once, so a file published inside is reachable after a crash.
   */
  private async ensureFolder(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    if (first !== undefined) {
      let current = dir;
      const created: string[] = [];
      while (current.length >= first.length) {
        created.push(current);
        const parent = dirname(current);
        if (parent === current) break;
        current = parent;
      }
      for (const folder of created) await fsyncDirectory(dirname(folder));
    }
    if (!this.rootDurable) {
      await fsyncDirectory(dirname(this.root));
      this.rootDurable = true;
    }
  }
}

function temporaryBeside(target: string): string {
  return `${target}${IN_PROGRESS_MARK}-${randomBytes(4).toString('hex')}`;
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
