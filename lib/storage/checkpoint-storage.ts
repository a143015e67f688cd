import type { CheckpointMetadata } from '../checkpoint/types.ts';
import type { FencingToken } from '../core/index.ts';
import type { SharedStateStore } from '../state/index.ts';

/** A checkpoint found in storage, with its metadata, or the reason it cannot be used. */
export type StoredCheckpoint =
  | { readonly status: 'complete'; readonly checkpointId: number; readonly metadata: CheckpointMetadata }
  | { readonly status: 'corrupt'; readonly checkpointId: number; readonly reason: string };

/** Where a task state file went, as the checkpoint's metadata records it. */
export interface WrittenTaskState {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * The task side of checkpoint storage: what a worker (a thread, a Fargate task) needs to snapshot and restore its
 * subtasks. It never commits, lists or deletes checkpoints; that is the catalog's (the coordinator's) job.
 */
export interface TaskStateStore {
  /** Human-readable location, for messages ("./checkpoints", "s3://bucket/prefix"). */
  readonly location: string;
  /**
   * Writes one task's state file of checkpoint `checkpointId` (`name` from `taskStateFileName` in
   * lib/checkpoint/naming.ts); the file appears whole or not at all. Returns its storage-relative path, size and sha256.
   * With `fencing`, the write is refused with FencedError (nothing written) when the location is fenced by a newer
   * epoch (see `CheckpointCatalog.fence`); the recorded epoch is read at most once per checkpoint id and store.
   * A fenced write names its file with the epoch (`task-<v>-<s>-e<epoch>.state`), so a write that passed a stale
   * check never replaces a newer attempt's file of the same checkpoint id; the returned path is what metadata records.
   */
  writeTaskState(checkpointId: number, name: string, data: Uint8Array, fencing?: FencingToken): Promise<WrittenTaskState>;
  /** Reads a task state file and verifies its size and sha256; throws a typed, non-retriable error when they differ. */
  readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array>;
  /**
   * The shared area ("shared/<name>" under the storage root) for state files several checkpoints refer to
   * (incremental keyed state). Files there are deleted only by `applyRetention` (once no kept checkpoint lists them
   * in `TaskStateHandle.sharedFiles`) and by `removeIncomplete` (files no complete checkpoint lists: crash debris).
   */
  readonly sharedState: SharedStateStore;
}

/**
 * The coordinator side of checkpoint storage: which checkpoints exist and which is complete. A checkpoint is
 * complete exactly when its metadata has been committed with `commitMetadata`, which is atomic: readers see all of
 * it or none of it.
 */
export interface CheckpointCatalog {
  /** Human-readable location, for messages ("./checkpoints", "s3://bucket/prefix"). */
  readonly location: string;
  /** Small job-level records kept beside the checkpoints (e.g. `restore.json`). */
  readonly records: JobRecordStore;
  /**
   * Atomically makes the checkpoint complete (create-if-absent: link(2) locally, a conditional write remotely). Ids
   * must be new: committing an id that is already complete with other metadata is refused. Pick the next id above
   * every id that `list()` and `removeIncomplete()` reported, corrupt ones included. When the metadata carries a
   * fencing token older than the epoch recorded by `fence`, the commit is refused with FencedError and changes nothing.
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
   * Records durably that the attempt holding `token` owns this location from now on: later task-state writes and
   * metadata commits carrying an older epoch are refused with FencedError. Refuses (FencedError, nothing recorded)
   * when a higher epoch is recorded already. Call it when an attempt starts, before its tasks write and before
   * `removeIncomplete`. From then on this catalog's `discard`, `removeIncomplete` and `applyRetention` check the
   * recorded epoch first and refuse with FencedError, deleting nothing, once a newer epoch fences the location: a
   * superseded coordinator must not delete the new owner's checkpoints (which reuse ids above the old ones).
   */
  fence(token: FencingToken): Promise<void>;
  /** The highest fencing token recorded, so a new run can start above it (`nextFencingToken(prev, current.epoch)`). */
  currentFence(): Promise<FencingToken | undefined>;
  /**
   * Makes the calling job the only one using this location until `release` (or until its process is gone), or
   * throws a ConfigError naming the job that holds it. Absent where the storage cannot do that itself (local
   * folders are locked by the runner with a lock file; S3 without a commit table is not locked).
   */
  acquireLease?(): Promise<StorageLease>;
}

/**
 * Both halves over one location, as the embedded runner (one process, both roles) uses them. A cluster worker
 * loads only a TaskStateStore, a coordinator function only a CheckpointCatalog.
 */
export interface CheckpointStorage extends TaskStateStore, CheckpointCatalog {
  readonly location: string;
}

/** A job's exclusive use of a checkpoint location (see `CheckpointStorage.acquireLease`). */
export interface StorageLease {
  release(): Promise<void>;
}

/** What restoring needs from wherever a checkpoint's task files are (checkpoint storage, or one savepoint directory). */
export type TaskStateReader = Pick<TaskStateStore, 'readTaskState' | 'sharedState'>;

/**
 * Small named text records of a job beside its checkpoints. `write` replaces a record whole (readers see the old
 * or the new text, never a mix); `read` gives undefined for a record that does not exist; `remove` is idempotent.
 */
export interface JobRecordStore {
  read(name: string): Promise<string | undefined>;
  write(name: string, text: string): Promise<void>;
  remove(name: string): Promise<void>;
}
