import { randomBytes } from 'node:crypto';
import { readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  METADATA_TEMP_FILE_NAME,
  checkpointDirName,
  metadataPath,
  metadataTempPath,
  parseCheckpointDirName,
  parseTaskStateFileName,
  parseTaskStatePath,
  taskStatePath,
} from '../../checkpoint/naming.ts';
import { planRetention } from '../../checkpoint/retention-plan.ts';
import { SharedFileRegistry } from '../../checkpoint/shared-file-registry.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { ConfigError, InternalError } from '../../core/index.ts';
import type { CheckpointStorage, StoredCheckpoint } from '../checkpoint-storage.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../errors.ts';
import { decodeMetadata, encodeMetadata } from '../metadata-codec.ts';
import { fileSizeAndSha256, fsyncDirectory, mkdirPrivate, sha256Hex, writeFileDurably } from './durable-fs.ts';
import { SharedStateDirectory } from './shared-state-directory.ts';
import { JobRecordDirectory } from './job-record-directory.ts';
import { errorCode, readVerifiedTaskFile, verifySharedFileSize } from './verified-files.ts';

/** Files being written carry this marker until their rename; any left over are crash debris. */
const IN_PROGRESS_MARK = '.inprogress';

/** One `chk-…` directory as found on disk. */
type ScannedCheckpoint = StoredCheckpoint | { readonly status: 'incomplete'; readonly checkpointId: number };

type CompleteCheckpoint = Extract<ScannedCheckpoint, { status: 'complete' }>;

/**
 * Checkpoints in a local folder, one `chk-<id>` directory each. Task files are published by rename after fsync; the
 * checkpoint becomes complete when `_metadata` is renamed into place and the directory is fsynced, so a crash at any
 * moment leaves either a complete checkpoint or a directory without `_metadata` that `removeIncomplete` deletes.
 *
 * One writer per folder: `removeIncomplete` would delete another process's in-flight checkpoint.
 */
export class FileCheckpointStorage implements CheckpointStorage {
  readonly location: string;
  private readonly root: string;
  /** Whether the folder's own entry in its parent has been fsynced (it may have been created by the first write). */
  private rootDurable = false;
  readonly sharedState: SharedStateDirectory;
  readonly records: JobRecordDirectory;

  constructor(dir: string) {
    if (dir === '') throw new ConfigError('the checkpoint directory must not be empty; pass --checkpoint-dir DIR');
    this.location = dir;
    this.root = resolve(dir);
    this.sharedState = new SharedStateDirectory(this.root);
    this.records = new JobRecordDirectory(this.root);
  }

  async writeTaskState(
    checkpointId: number,
    name: string,
    data: Uint8Array,
  ): Promise<{ path: string; bytes: number; sha256: string }> {
    const task = parseTaskStateFileName(name);
    if (task === undefined) {
      throw new InternalError(`"${name}" is not a task state file name (expected task-<vertex>-<subtask>.state)`);
    }
    const path = taskStatePath({ kind: 'checkpoint', checkpointId }, task);
    const dir = this.absolute(checkpointDirName(checkpointId));
    const target = this.absolute(path);
    const temp = join(dir, `${name}${IN_PROGRESS_MARK}-${randomBytes(4).toString('hex')}`);
    try {
      await mkdirPrivate(dir);
      await writeFileDurably(temp, data);
      await rename(temp, target);
    } catch (cause) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw new CheckpointIoError('write task state file', target, cause);
    }
    return { path, bytes: data.byteLength, sha256: await sha256Hex(data) };
  }

  async readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return readVerifiedTaskFile(this.taskFile(path), expected);
  }

  async commitMetadata(metadata: CheckpointMetadata): Promise<void> {
    const id = metadata.checkpointId;
    const bytes = encodeMetadata(metadata);
    const dir = this.absolute(checkpointDirName(id));
    const target = this.absolute(metadataPath({ kind: 'checkpoint', checkpointId: id }));
    const temp = this.absolute(metadataTempPath({ kind: 'checkpoint', checkpointId: id }));
    try {
      decodeMetadata(bytes, target, id);
    } catch (cause) {
      throw new InternalError(`refusing to commit checkpoint ${id}: its metadata would not read back`, cause);
    }
    if (await this.exists(target)) {
      throw new InternalError(`checkpoint ${id} in ${this.location} is already complete; checkpoint ids must be new`);
    }
    try {
      await mkdirPrivate(dir);
      // The task files' names and the checkpoint directory itself must be durable before the metadata points at them.
      await fsyncDirectory(dir);
      await fsyncDirectory(this.root);
      if (!this.rootDurable) {
        await fsyncDirectory(dirname(this.root));
        this.rootDurable = true;
      }
      await rm(temp, { force: true });
      await writeFileDurably(temp, bytes);
      await rename(temp, target);
      await fsyncDirectory(dir);
    } catch (cause) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw new CheckpointIoError(`commit the metadata of checkpoint ${id} to`, target, cause);
    }
  }

  async list(): Promise<StoredCheckpoint[]> {
    const found = await this.scan();
    return found.filter((c): c is StoredCheckpoint => c.status !== 'incomplete');
  }

  /**
   * Verifies every task file of each candidate (size, then a streamed sha256), newest first. Corruption skips to the
   * previous checkpoint; an I/O error is thrown instead, because falling back on a transient failure would silently
   * rewind the job.
   */
  async latestComplete(onSkip?: (checkpointId: number, reason: string) => void): Promise<CheckpointMetadata | undefined> {
    for (const checkpoint of await this.list()) {
      if (checkpoint.status === 'corrupt') {
        onSkip?.(checkpoint.checkpointId, checkpoint.reason);
        continue;
      }
      try {
        for (const task of checkpoint.metadata.tasks) await this.verifyTaskFile(task.path, task);
        // Shared files are checked by size only (hashing gigabytes of state at every start costs seconds); restoring
        // verifies each one's sha256 as it is read.
        for (const task of checkpoint.metadata.tasks) {
          for (const file of task.sharedFiles ?? []) await verifySharedFileSize(this.root, file.path, file.bytes);
        }
        return checkpoint.metadata;
      } catch (error) {
        if (!(error instanceof CheckpointCorruptError)) throw error;
        onSkip?.(checkpoint.checkpointId, error.problem);
      }
    }
    return undefined;
  }

  async discard(checkpointId: number): Promise<void> {
    const dir = this.absolute(checkpointDirName(checkpointId));
    const meta = this.absolute(metadataPath({ kind: 'checkpoint', checkpointId }));
    try {
      // Metadata first: a crash halfway through leaves an incomplete checkpoint, never a complete one missing files.
      await rm(meta, { force: true });
      await rm(dir, { recursive: true, force: true });
    } catch (cause) {
      throw new CheckpointIoError(`discard checkpoint ${checkpointId} at`, dir, cause);
    }
  }

  async removeIncomplete(): Promise<number[]> {
    const removed: number[] = [];
    const found = await this.scan();
    for (const checkpoint of found) {
      if (checkpoint.status === 'incomplete') {
        await this.discard(checkpoint.checkpointId);
        removed.push(checkpoint.checkpointId);
      } else {
        await this.removeTempFiles(checkpoint.checkpointId);
      }
    }
    // Shared files no complete checkpoint lists were written by checkpoints that never completed.
    const registry = new SharedFileRegistry(found.filter((c): c is CompleteCheckpoint => c.status === 'complete').map((c) => c.metadata));
    await this.sharedState.removeTemporary();
    await this.sharedState.remove(registry.unreferenced(await this.sharedState.list()));
    return removed.sort((a, b) => a - b);
  }

  /**
   * Counts complete checkpoints only; savepoints are the user's and are neither counted nor deleted. Everything older
   * than the oldest retained checkpoint (complete, corrupt or abandoned) goes, except directories a retained
   * checkpoint's metadata points into.
   */
  async applyRetention(retain: number): Promise<number[]> {
    const plan = planRetention(await this.scan(), retain);
    for (const checkpointId of plan.discard) await this.discard(checkpointId);
    // Only after the metadata that listed them is gone: a crash in between leaves unreferenced files, not dangling references.
    await this.sharedState.remove(plan.freedSharedFiles);
    return plan.discard;
  }

  /** Every `chk-…` directory, newest first; other entries in the folder are left alone. */
  private async scan(): Promise<ScannedCheckpoint[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return [];
      throw new CheckpointIoError('list the checkpoint directory', this.root, cause);
    }
    const ids = names
      .map((name) => parseCheckpointDirName(name))
      .filter((id): id is number => id !== undefined)
      .sort((a, b) => b - a);
    return Promise.all(ids.map((id) => this.inspect(id)));
  }

  private async inspect(checkpointId: number): Promise<ScannedCheckpoint> {
    const file = this.absolute(metadataPath({ kind: 'checkpoint', checkpointId }));
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (cause) {
      const code = errorCode(cause);
      if (code === 'ENOENT') return { status: 'incomplete', checkpointId };
      if (code === 'EISDIR') return { status: 'corrupt', checkpointId, reason: `${file} is a directory` };
      throw new CheckpointIoError('read checkpoint metadata', file, cause);
    }
    try {
      return { status: 'complete', checkpointId, metadata: decodeMetadata(bytes, file, checkpointId) };
    } catch (error) {
      if (!(error instanceof CheckpointCorruptError)) throw error;
      return { status: 'corrupt', checkpointId, reason: error.problem };
    }
  }

  private async verifyTaskFile(path: string, expected: { bytes: number; sha256: string }): Promise<void> {
    const file = this.taskFile(path);
    try {
      const size = (await stat(file)).size;
      if (size !== expected.bytes) {
        throw new CheckpointCorruptError(file, `it has ${size} bytes, the metadata says ${expected.bytes}`);
      }
      const actual = await fileSizeAndSha256(file);
      if (actual.bytes !== expected.bytes || actual.sha256 !== expected.sha256) {
        throw new CheckpointCorruptError(file, 'its sha256 differs from the one recorded in the metadata');
      }
    } catch (cause) {
      if (cause instanceof CheckpointCorruptError) throw cause;
      if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the file is missing', { cause });
      throw new CheckpointIoError('verify task state file', file, cause);
    }
  }

  private async removeTempFiles(checkpointId: number): Promise<void> {
    const dir = this.absolute(checkpointDirName(checkpointId));
    try {
      for (const name of await readdir(dir)) {
        if (name === METADATA_TEMP_FILE_NAME || name.includes(IN_PROGRESS_MARK)) {
          await unlink(join(dir, name));
        }
      }
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return;
      throw new CheckpointIoError('remove leftover temporary files in', dir, cause);
    }
  }

  /** A task state path from metadata, checked against the naming scheme so it cannot point outside the folder. */
  private taskFile(path: string): string {
    if (parseTaskStatePath(path) === undefined) {
      throw new CheckpointCorruptError(path, 'the metadata names it as a task state file, which it cannot be');
    }
    return this.absolute(path);
  }

  private absolute(storagePath: string): string {
    return join(this.root, ...storagePath.split('/'));
  }

  private async exists(file: string): Promise<boolean> {
    try {
      await stat(file);
      return true;
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return false;
      throw new CheckpointIoError('inspect', file, cause);
    }
  }
}
