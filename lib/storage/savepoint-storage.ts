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
}
