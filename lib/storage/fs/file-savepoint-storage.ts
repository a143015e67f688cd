import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { METADATA_FILE_NAME, directoryName, taskStateFileName, taskStatePath, type CheckpointDirectory } from '../../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { ConfigError, InternalError, SluiceError } from '../../core/index.ts';
import type { TaskStateReader } from '../checkpoint-storage.ts';
import { CheckpointIoError } from '../errors.ts';
import { decodeMetadata, encodeMetadata } from '../metadata-codec.ts';
import type { SavepointStorage } from '../savepoint-storage.ts';
import { PRIVATE_DIR_MODE, fsyncDirectory, mkdirPrivate, writeFileDurably } from './durable-fs.ts';

/** A savepoint directory is assembled under this hidden name and renamed into place once whole. */
const IN_PROGRESS = /^\.savepoint-\d{10}-\d+\.inprogress$/;

function inProgressName(name: string): string {
  return `.${name}.inprogress`;
}

/**
 * Savepoints in a local folder, one self-contained `savepoint-<id>-<epoch ms>` directory each: `_metadata` and
 * every task state file, with metadata paths naming files of that directory. Nothing here deletes a savepoint;
 * they belong to the user. A directory appears by rename only once complete, so a crash leaves at most a hidden
 * `.savepoint-….inprogress` directory, which `removeIncomplete` deletes.
 */
export class FileSavepointStorage implements SavepointStorage {
  readonly location: string;
  private readonly root: string;
  private rootDurable = false;

  constructor(dir: string) {
    if (dir === '') throw new ConfigError('the savepoint directory must not be empty; pass --savepoint-dir DIR');
    this.location = dir;
    this.root = resolve(dir);
  }

  /** Absolute path of the savepoint directory that `write` makes for this metadata. */
  pathOf(metadata: Pick<CheckpointMetadata, 'checkpointId' | 'triggeredAt'>): string {
    return join(this.root, directoryName(savepointDirectory(metadata)));
  }

  /**
   * Copies the task files `metadata` lists (read and verified through `source`, e.g. the checkpoint storage the
   * tasks wrote them to) into a new savepoint directory, then writes its metadata; returns the directory's absolute
   * path. The directory is renamed into place last, so it is complete or absent.
   */
  async write(metadata: CheckpointMetadata, source: TaskStateReader): Promise<string> {
    if (!metadata.savepoint) throw new InternalError(`checkpoint ${metadata.checkpointId} is not a savepoint`);
    const dir = savepointDirectory(metadata);
    const name = directoryName(dir);
    const target = join(this.root, name);
    const temp = join(this.root, inProgressName(name));
    if (await this.exists(target)) throw new InternalError(`savepoint ${target} already exists; savepoint directories are never reused`);
    try {
      await mkdirPrivate(this.root);
      await rm(temp, { recursive: true, force: true });
      await mkdir(temp, { mode: PRIVATE_DIR_MODE });
      const tasks = [];
      for (const handle of metadata.tasks) {
        const data = await source.readTaskState(handle.path, handle);
        await writeFileDurably(join(temp, taskStateFileName(handle.task)), data);
        tasks.push({ ...handle, path: taskStatePath(dir, handle.task) });
        // Self-contained: shared state files come along under the same relative paths (verified while copied).
        for (const shared of handle.sharedFiles ?? []) await source.sharedState.get(shared, join(temp, ...shared.path.split('/')));
      }
      const bytes = encodeMetadata({ ...metadata, tasks });
      decodeMetadata(bytes, join(target, METADATA_FILE_NAME), metadata.checkpointId);
      await writeFileDurably(join(temp, METADATA_FILE_NAME), bytes);
      await fsyncDirectory(temp);
      await rename(temp, target);
      await fsyncDirectory(this.root);
      if (!this.rootDurable) {
        await fsyncDirectory(dirname(this.root));
        this.rootDurable = true;
      }
    } catch (cause) {
      await rm(temp, { recursive: true, force: true }).catch(() => undefined);
      // Typed errors of the source (a corrupt or unreadable task file) say more than a generic I/O error.
      if (cause instanceof SluiceError) throw cause;
      throw new CheckpointIoError('write savepoint', target, cause);
    }
    return target;
  }

  /** Deletes savepoint directories a crash left half-written. Returns their names. */
  async removeIncomplete(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new CheckpointIoError('list the savepoint directory', this.root, cause);
    }
    const removed = names.filter((n) => IN_PROGRESS.test(n));
    for (const name of removed) {
      try {
        await rm(join(this.root, name), { recursive: true, force: true });
      } catch (cause) {
        throw new CheckpointIoError('remove the incomplete savepoint', join(this.root, name), cause);
      }
    }
    return removed;
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw new CheckpointIoError('inspect', path, cause);
    }
  }
}

function savepointDirectory(metadata: Pick<CheckpointMetadata, 'checkpointId' | 'triggeredAt'>): CheckpointDirectory {
  return { kind: 'savepoint', checkpointId: metadata.checkpointId, timestamp: metadata.triggeredAt };
}
