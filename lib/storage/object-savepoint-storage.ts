import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  METADATA_FILE_NAME,
  directoryName,
  parseDirectoryName,
  parseSavepointDirName,
  parseTaskStatePath,
  taskStateFileName,
  taskStatePath,
  type CheckpointDirectory,
} from '../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../checkpoint/types.ts';
import { ConfigError, InternalError, SluiceError } from '../core/index.ts';
import type { TaskStateReader } from './checkpoint-storage.ts';
import { CheckpointCorruptError, CheckpointIoError } from './errors.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import { readVerifiedObject } from './verified-object.ts';
import { decodeMetadata, encodeMetadata } from './metadata-codec.ts';
import type { ObjectDigest, ObjectStore } from './object-store.ts';
import { ObjectSharedState } from './object-shared-state.ts';
import type { SavepointStorage, SnapshotReader } from './savepoint-storage.ts';

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

  openSnapshot(name: string): ObjectSnapshotReader {
    // One folder name: `..` or a `/` could reach objects outside the savepoint location.
    if (name === '' || name === '.' || name === '..' || name.includes('/')) {
      throw new ConfigError(`"${name}" is not the name of a savepoint folder in ${this.store.describe()}`);
    }
    return new ObjectSnapshotReader(new SubfolderStore(this.store, name));
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

/**
 * A savepoint (or checkpoint folder) in an object store read on its own, as `--restore s3://…/savepoint-…` and the
 * restore.json of a job stopped with a savepoint in S3 name it: the object-store twin of SnapshotDirectory.
 */
export class ObjectSnapshotReader implements SnapshotReader {
  readonly location: string;
  /** Shared files of a self-contained savepoint are under its own `shared/`. */
  readonly sharedState: ObjectSharedState;

  constructor(private readonly store: ObjectStore) {
    this.location = store.describe();
    this.sharedState = new ObjectSharedState(store);
  }

  async hasMetadata(): Promise<boolean> {
    try {
      return (await this.store.size(METADATA_FILE_NAME)) !== undefined;
    } catch (cause) {
      throw new CheckpointIoError('inspect', this.store.describe(METADATA_FILE_NAME), cause);
    }
  }

  async readMetadata(): Promise<CheckpointMetadata> {
    const where = this.store.describe(METADATA_FILE_NAME);
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.store.get(METADATA_FILE_NAME);
    } catch (cause) {
      throw new CheckpointIoError('read checkpoint metadata', where, cause);
    }
    if (bytes === undefined) throw new CheckpointCorruptError(where, 'the file is missing');
    const folder = this.location.replace(/\/+$/, '');
    return decodeMetadata(bytes, where, parseDirectoryName(folder.slice(folder.lastIndexOf('/') + 1))?.checkpointId);
  }

  async verifyTaskFiles(metadata: CheckpointMetadata): Promise<void> {
    for (const handle of metadata.tasks) {
      const path = taskObject(handle.path);
      const where = this.store.describe(path);
      let actual: ObjectDigest | undefined;
      try {
        actual = await this.store.digest(path);
      } catch (cause) {
        throw new CheckpointIoError('verify task state file', where, cause);
      }
      if (actual === undefined) throw new CheckpointCorruptError(where, 'the file is missing');
      if (actual.bytes !== handle.bytes || actual.sha256 !== handle.sha256) {
        throw new CheckpointCorruptError(where, `it has ${actual.bytes} bytes and another sha256 than the metadata records`);
      }
      // Shared files by size here; their sha256 is checked as each is read during the restore.
      for (const shared of handle.sharedFiles ?? []) {
        const bytes = await this.sharedState.size(shared.path);
        if (bytes === undefined) throw new CheckpointCorruptError(this.store.describe(shared.path), 'the shared state file is missing');
        if (bytes !== shared.bytes) {
          throw new CheckpointCorruptError(this.store.describe(shared.path), `it has ${bytes} bytes, the metadata says ${shared.bytes}`);
        }
      }
    }
  }

  async readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    const object = taskObject(path);
    return readVerifiedObject(this.store, object, this.store.describe(object), expected);
  }
}

/** A metadata task path (`<folder>/task-<v>-<s>.state`) as the object of that name in this folder, whatever the folder is called now. */
function taskObject(path: string): string {
  if (parseTaskStatePath(path) === undefined) {
    throw new CheckpointCorruptError(path, 'the metadata names it as a task state file, which it cannot be');
  }
  return path.slice(path.indexOf('/') + 1);
}

/** The objects under one folder of a store, as a store of their own (read by ObjectSnapshotReader). */
class SubfolderStore implements ObjectStore {
  readonly location: string;

  constructor(
    private readonly parent: ObjectStore,
    private readonly folder: string,
  ) {
    this.location = parent.describe(folder);
  }

  private at(path: string): string {
    return path === '' ? this.folder : `${this.folder}/${path}`;
  }

  describe(path?: string): string {
    return this.parent.describe(path === undefined || path === '' ? this.folder : this.at(path));
  }
  get(path: string): Promise<Uint8Array | undefined> {
    return this.parent.get(this.at(path));
  }
  size(path: string): Promise<number | undefined> {
    return this.parent.size(this.at(path));
  }
  digest(path: string): Promise<ObjectDigest | undefined> {
    return this.parent.digest(this.at(path));
  }
  put(path: string, data: Uint8Array, sha256?: string): Promise<void> {
    return this.parent.put(this.at(path), data, sha256);
  }
  putIfAbsent(path: string, data: Uint8Array, sha256?: string): Promise<boolean> {
    return this.parent.putIfAbsent(this.at(path), data, sha256);
  }
  putFile(path: string, localPath: string): Promise<ObjectDigest> {
    return this.parent.putFile(this.at(path), localPath);
  }
  getFile(path: string, localPath: string): Promise<ObjectDigest | undefined> {
    return this.parent.getFile(this.at(path), localPath);
  }
  async list(dir: string): Promise<string[]> {
    const prefix = `${this.folder}/`;
    return (await this.parent.list(this.at(dir))).map((p) => (p.startsWith(prefix) ? p.slice(prefix.length) : p));
  }
  listFolders(dir: string): Promise<string[]> {
    return this.parent.listFolders(this.at(dir));
  }
  delete(paths: readonly string[]): Promise<void> {
    return this.parent.delete(paths.map((p) => this.at(p)));
  }
  deleteFolder(dir: string): Promise<void> {
    return this.parent.deleteFolder(this.at(dir));
  }
  removeTemporary(dir: string): Promise<void> {
    return this.parent.removeTemporary(this.at(dir));
  }
}
