import type { CheckpointMetadata } from '../checkpoint/types.ts';
import type { SharedStateStore } from '../state/index.ts';

/** A checkpoint found in storage, with its metadata, or the reason it cannot be used. */
export type StoredCheckpoint =
  | { readonly status: 'complete'; readonly checkpointId: number; readonly metadata: CheckpointMetadata }
  | { readonly status: 'corrupt'; readonly checkpointId: number; readonly reason: string };

/**
 * Where checkpoints live (a local folder now, S3 later). A checkpoint is complete exactly when its metadata has been
 * committed with `commitMetadata`, which is atomic: readers see all of it or none of it.
 */
export interface CheckpointStorage {
  /** Human-readable location, for messages ("./checkpoints", "s3://bucket/prefix"). */
  readonly location: string;
  /**
   * Writes one task's state file of checkpoint `checkpointId` (`name` from `taskStateFileName` in
   * lib/checkpoint/naming.ts); the file appears whole or not at all. Returns its storage-relative path, size and sha256.
   */
  writeTaskState(checkpointId: number, name: string, data: Uint8Array): Promise<{ path: string; bytes: number; sha256: string }>;
  /** Reads a task state file and verifies its size and sha256; throws a typed, non-retriable error when they differ. */
  readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array>;
  /**
   * The shared area ("shared/<name>" under the storage root) for state files several checkpoints refer to
   * (incremental keyed state). Files there are deleted only by `applyRetention` (once no kept checkpoint lists them
   * in `TaskStateHandle.sharedFiles`) and by `removeIncomplete` (files no complete checkpoint lists: crash debris).
   */
  readonly sharedState: SharedStateStore;
  /** Small job-level records kept beside the checkpoints (e.g. `restore.json`). */
  readonly records: JobRecordStore;
  /**
   * Atomically makes the checkpoint complete (temp file, fsync, rename locally; conditional write remotely). Ids must
   * be new: committing an id that is already complete is refused. Pick the next id above every id that `list()` and
   * `removeIncomplete()` reported, corrupt ones included.
   */
  commitMetadata(metadata: CheckpointMetadata): Promise<void>;
  /** Checkpoints with committed metadata, newest first, each verified as far as its metadata goes (not task files). */
  list(): Promise<StoredCheckpoint[]>;
  /**
   * The newest complete checkpoint (savepoints included) whose task files all verify; corrupt ones are reported
   * through `onSkip` and skipped. I/O errors are thrown rather than skipped: a transient failure must not rewind the job.
   */
  latestComplete(onSkip?: (checkpointId: number, reason: string) => void): Promise<CheckpointMetadata | undefined>;
  /** Removes everything of a checkpoint (complete or not). Idempotent. */
  discard(checkpointId: number): Promise<void>;
  /**
   * Removes checkpoints that never completed (crash leftovers) and leftover temporary files. Returns their ids. Call it
   * at start-up, before triggering checkpoints: it cannot tell a crashed checkpoint from one in flight.
   */
  removeIncomplete(): Promise<number[]>;
  /**
   * Keeps the newest `retain` (>= 1) complete checkpoints, savepoints not counted, and discards every older checkpoint
   * (complete, corrupt or abandoned) except savepoints and files a retained checkpoint refers to. Returns discarded ids.
   */
  applyRetention(retain: number): Promise<number[]>;
  /**
   * Makes the calling job the only one using this location until `release` (or until its process is gone), or
   * throws a ConfigError naming the job that holds it. Absent where the storage cannot do that itself (local
   * folders are locked by the runner with a lock file; S3 without a commit table is not locked).
   */
  acquireLease?(): Promise<StorageLease>;
}

/** A job's exclusive use of a checkpoint location (see `CheckpointStorage.acquireLease`). */
export interface StorageLease {
  release(): Promise<void>;
}

/** What restoring needs from wherever a checkpoint's task files are (checkpoint storage, or one savepoint directory). */
export type TaskStateReader = Pick<CheckpointStorage, 'readTaskState' | 'sharedState'>;

/**
 * Small named text records of a job beside its checkpoints. `write` replaces a record whole (readers see the old
 * or the new text, never a mix); `read` gives undefined for a record that does not exist; `remove` is idempotent.
 */
export interface JobRecordStore {
  read(name: string): Promise<string | undefined>;
  write(name: string, text: string): Promise<void>;
  remove(name: string): Promise<void>;
}
