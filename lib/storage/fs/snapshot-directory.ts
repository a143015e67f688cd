import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { METADATA_FILE_NAME, parseDirectoryName, parseTaskStatePath } from '../../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../errors.ts';
import { decodeMetadata } from '../metadata-codec.ts';
import type { SnapshotReader } from '../savepoint-storage.ts';
import { fileSizeAndSha256 } from './durable-fs.ts';
import { SharedStateDirectory } from './shared-state-directory.ts';
import { errorCode, readVerifiedTaskFile, verifySharedFileSize } from './verified-files.ts';

/**
 * One savepoint or checkpoint directory read on its own, as `--restore` names it: its `_metadata` and the task files
 * beside it. Task paths in the metadata are looked up by file name inside this directory, so a savepoint can be
 * moved or renamed and still restores.
 */
export class SnapshotDirectory implements SnapshotReader {
  readonly path: string;
  /** The absolute path (SnapshotReader's location). */
  readonly location: string;
  /** Shared state files of a self-contained savepoint live in its own `shared/` folder. */
  readonly sharedState: SharedStateDirectory;

  constructor(path: string) {
    this.path = resolve(path);
    this.location = this.path;
    this.sharedState = new SharedStateDirectory(this.path);
  }

  /** Whether the directory holds a `_metadata` file (else it is not a complete checkpoint or savepoint). */
  async hasMetadata(): Promise<boolean> {
    try {
      return (await stat(join(this.path, METADATA_FILE_NAME))).isFile();
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT' || errorCode(cause) === 'ENOTDIR') return false;
      throw new CheckpointIoError('inspect', join(this.path, METADATA_FILE_NAME), cause);
    }
  }

  /** Reads and verifies `_metadata`; when the directory keeps its original name, the id in it must match. */
  async readMetadata(): Promise<CheckpointMetadata> {
    const file = join(this.path, METADATA_FILE_NAME);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the file is missing', { cause });
      throw new CheckpointIoError('read checkpoint metadata', file, cause);
    }
    return decodeMetadata(bytes, file, parseDirectoryName(basename(this.path))?.checkpointId);
  }

  /** Checks every task file the metadata lists (size, then a streamed sha256) without loading it. */
  async verifyTaskFiles(metadata: CheckpointMetadata): Promise<void> {
    for (const handle of metadata.tasks) {
      const file = this.taskFile(handle.path);
      let actual: { bytes: number; sha256: string };
      try {
        actual = await fileSizeAndSha256(file);
      } catch (cause) {
        if (errorCode(cause) === 'ENOENT') throw new CheckpointCorruptError(file, 'the file is missing', { cause });
        throw new CheckpointIoError('verify task state file', file, cause);
      }
      if (actual.bytes !== handle.bytes || actual.sha256 !== handle.sha256) {
        throw new CheckpointCorruptError(file, `it has ${actual.bytes} bytes and another sha256 than the metadata records`);
      }
      // Shared files by size here; their sha256 is checked as each is read during the restore.
      for (const shared of handle.sharedFiles ?? []) await verifySharedFileSize(this.path, shared.path, shared.bytes);
    }
  }

  async readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return readVerifiedTaskFile(this.taskFile(path), expected);
  }

  /** The file of a metadata task path inside this directory; the path must follow the naming scheme. */
  private taskFile(path: string): string {
    const parsed = parseTaskStatePath(path);
    if (parsed === undefined) {
      throw new CheckpointCorruptError(path, 'the metadata names it as a task state file, which it cannot be');
    }
    return join(this.path, path.slice(path.indexOf('/') + 1));
  }
}
