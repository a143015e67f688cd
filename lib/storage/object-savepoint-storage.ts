import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  METADATA_FILE_NAME,
  directoryName,
  parseSavepointDirName,
  taskStateFileName,
  taskStatePath,
  type CheckpointDirectory,
} from '../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../checkpoint/types.ts';
import { InternalError, SluiceError } from '../core/index.ts';
import type { TaskStateReader } from './checkpoint-storage.ts';
import { CheckpointIoError } from './errors.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import { decodeMetadata, encodeMetadata } from './metadata-codec.ts';
import type { ObjectStore } from './object-store.ts';
import type { SavepointStorage } from './savepoint-storage.ts';

/**
 * Savepoints in an object store (S3), laid out as local ones: `savepoint-<id>-<epoch ms>/_metadata`, the task
 * files beside it and `shared/…` under it. An object store has no folder rename, so `_metadata` is written last,
 * with create-if-absent: a savepoint folder without it is incomplete, and `removeIncomplete` deletes it.
 */
export class ObjectSavepointStorage implements SavepointStorage {
  readonly location: string;

  constructor(private readonly store: ObjectStore) {
    this.location = store.location;
  }

  pathOf(metadata: Pick<CheckpointMetadata, 'checkpointId' | 'triggeredAt'>): string {
    return this.store.describe(directoryName(savepointDirectory(metadata)));
  }

  async write(metadata: CheckpointMetadata, source: TaskStateReader): Promise<string> {
    if (!metadata.savepoint) throw new InternalError(`checkpoint ${metadata.checkpointId} is not a savepoint`);
    const dir = savepointDirectory(metadata);
    const name = directoryName(dir);
    const target = this.pathOf(metadata);
    const metadataObject = `${name}/${METADATA_FILE_NAME}`;
    if ((await this.exists(metadataObject)) === true) {
      throw new InternalError(`savepoint ${target} already exists; savepoint directories are never reused`);
    }
    // Shared files pass through a local file: the source's shared area hands them out as files.
    const scratch = await mkdtemp(join(tmpdir(), 'sluice-savepoint-'));
    try {
      const tasks = [];
      for (const handle of metadata.tasks) {
        const data = await source.readTaskState(handle.path, handle);
        await this.store.put(`${name}/${taskStateFileName(handle.task)}`, data, await sha256Hex(data));
        tasks.push({ ...handle, path: taskStatePath(dir, handle.task) });
        for (const shared of handle.sharedFiles ?? []) {
          const local = join(scratch, shared.path.split('/').join('_'));
          await source.sharedState.get(shared, local);
          await this.store.putFile(`${name}/${shared.path}`, local);
          await rm(local, { force: true });
        }
      }
      const bytes = encodeMetadata({ ...metadata, tasks });
      decodeMetadata(bytes, this.store.describe(metadataObject), metadata.checkpointId);
      if (!(await this.store.putIfAbsent(metadataObject, bytes, await sha256Hex(bytes)))) {
        throw new InternalError(`savepoint ${target} already exists; savepoint directories are never reused`);
      }
    } catch (cause) {
      // Typed errors of the source (a corrupt or unreadable task file) say more than a generic I/O error.
      if (cause instanceof SluiceError) throw cause;
      throw new CheckpointIoError('write savepoint', target, cause);
    } finally {
      await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
    }
    return target;
  }

  async removeIncomplete(): Promise<string[]> {
    const removed: string[] = [];
    try {
      for (const name of await this.store.listFolders('')) {
        if (parseSavepointDirName(name) === undefined) continue;
        if ((await this.store.size(`${name}/${METADATA_FILE_NAME}`)) !== undefined) continue;
        await this.store.deleteFolder(name);
        removed.push(name);
      }
    } catch (cause) {
      throw new CheckpointIoError('remove incomplete savepoints in', this.store.describe(), cause);
    }
    return removed;
  }

  private async exists(path: string): Promise<boolean> {
    try {
      return (await this.store.size(path)) !== undefined;
    } catch (cause) {
      throw new CheckpointIoError('inspect', this.store.describe(path), cause);
    }
  }
}

function savepointDirectory(metadata: Pick<CheckpointMetadata, 'checkpointId' | 'triggeredAt'>): CheckpointDirectory {
  return { kind: 'savepoint', checkpointId: metadata.checkpointId, timestamp: metadata.triggeredAt };
}
