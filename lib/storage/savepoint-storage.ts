import type { CheckpointMetadata } from '../checkpoint/types.ts';
import type { TaskStateReader } from './checkpoint-storage.ts';

/**
 * Where savepoints go: one self-contained `savepoint-<id>-<epoch ms>` folder each (`_metadata`, every task state
 * file and the shared files they list), so a savepoint restores on its own wherever it is copied. Nothing here
 * deletes a complete savepoint; they belong to the user. A local folder (FileSavepointStorage) and an object store
 * such as S3 (ObjectSavepointStorage) implement it.
 */
export interface SavepointStorage {
  /** Human-readable location of the savepoints' parent folder. */
  readonly location: string;
  /** The location (absolute path or URL) of the savepoint that `write` makes for this metadata. */
  pathOf(metadata: Pick<CheckpointMetadata, 'checkpointId' | 'triggeredAt'>): string;
  /**
   * Copies the task files `metadata` lists (read and verified through `source`, e.g. the checkpoint storage the
   * tasks wrote them to) into a new savepoint, then its metadata; returns `pathOf(metadata)`. The savepoint is
   * complete (has `_metadata`) only once everything else is there.
   */
  write(metadata: CheckpointMetadata, source: TaskStateReader): Promise<string>;
  /** Deletes savepoints a crash left half-written. Returns their names. Call it at start-up only. */
  removeIncomplete(): Promise<string[]>;
  /**
   * The savepoint (or checkpoint folder) `name` directly under this location, read on its own as `--restore` and
   * restore.json name it. Storage that cannot read its savepoints back leaves it out.
   */
  openSnapshot?(name: string): SnapshotReader;
}

/**
 * One savepoint or checkpoint folder read on its own, wherever it is (a local directory, an S3 prefix): its
 * `_metadata` and the task and shared files beside it. Task paths in the metadata are looked up by file name inside
 * the folder, so a savepoint can be moved or renamed and still restores.
 */
export interface SnapshotReader extends TaskStateReader {
  /** Where it is, as restore.json records it and messages name it: an absolute path or a URI. */
  readonly location: string;
  /** Whether the folder holds `_metadata` (else it is not a complete checkpoint or savepoint). */
  hasMetadata(): Promise<boolean>;
  /** Reads and verifies `_metadata`; when the folder keeps its original name, the id in it must match. */
  readMetadata(): Promise<CheckpointMetadata>;
  /** Checks every task file the metadata lists (size and sha256) and the size of every shared file. */
  verifyTaskFiles(metadata: CheckpointMetadata): Promise<void>;
}
