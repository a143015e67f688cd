import { ConfigError, type Key, type KeyGroupFunction, type KeyGroupRange } from '../core/index.ts';
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from './descriptors.ts';
import type {
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
  Namespace,
} from './keyed-state.ts';
import type { TimerKeyGroupSnapshot } from './timer-state.ts';

/** One key group's state as plain data: per state name, the entries [key, namespace, value]. */
export interface KeyGroupSnapshot {
  readonly keyGroup: number;
  readonly states: Record<string, [Key, Namespace, unknown][]>;
}

/** A point-in-time copy of the keyed state of one subtask, organised by key group so it can be redistributed. */
export interface KeyedStateSnapshot {
  readonly maxParallelism: number;
  readonly keyGroups: KeyGroupSnapshot[];
}

export interface KeyedStateBackendOptions {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Processing-time clock for TTL. */
  readonly now: () => number;
  /**
   * Key to key group: the hash of the keyed edge in front of the operator (keyBy's `keyGroups`), so state lands in
   * the key group the record was routed by. @default keyGroupOf (murmur)
   */
  readonly keyGroupOf?: KeyGroupFunction;
}

/** A backend's key-group range as a plain copy, after checking it lies within [0, maxParallelism) (ConfigError). */
export function checkedKeyGroupRange(options: KeyedStateBackendOptions): KeyGroupRange {
  const { keyGroupRange, maxParallelism } = options;
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1) {
    throw new ConfigError(`maxParallelism must be a positive integer, got ${maxParallelism}`);
  }
  const { start, end } = keyGroupRange;
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end >= maxParallelism) {
    throw new ConfigError(`key group range [${start}, ${end}] is not within [0, ${maxParallelism - 1}]`);
  }
  return { start, end };
}

/**
 * Keyed state of one operator subtask. The operator sets the current key before touching state; every handle
 * created here reads and writes the entry of that key (and namespace).
 */
export interface KeyedStateBackend {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;

  /**
   * Resolves once the backend is ready for synchronous use (a database opened); the runtime awaits it before
   * restoring or opening the operator. Optional: in-memory backends are always ready.
   */
  open?(): Promise<void>;

  /** Sets the key (and derives its key group) for all subsequent state access. */
  setCurrentKey(key: Key): void;
  getCurrentKey(): Key;
  getCurrentKeyGroup(): number;

  /** Handles are created once per descriptor name and reused; the same name must keep the same kind. */
  getValueState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T>;
  getMapState<UK extends Key, V>(descriptor: MapStateDescriptor<UK, V>): InternalMapState<UK, V>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): InternalAggregatingState<IN, ACC, OUT>;

  /**
   * Optional read-ahead for backends that keep state off the heap (RocksDB). Keyed operators call it once per
   * input batch, and once before firing a batch of timers, with the keys they are about to set (duplicates and
   * keys of other subtasks are allowed and ignored). It returns a promise when it has to read, which the caller
   * awaits before touching state of those keys, and undefined when everything is already in memory, so backends
   * without it (memory) and fully cached batches stay synchronous. Keys that were not prefetched still read
   * correctly (a slower synchronous fallback); prefetched keys stay cached at least until the next call.
   */
  prefetch?(keys: readonly Key[]): void | Promise<void>;

  /** Keys that have an entry in the named state under `namespace` (for applyToAllKeys-style operations). */
  keys(stateName: string, namespace: Namespace): Key[];

  /** Number of (key, namespace) entries across all states; for metrics and tests. */
  entryCount(): number;

  /**
   * The synchronous phase of checkpoint `checkpointId`. In-memory backends copy all state, per key group (later
   * writes do not change the copy); file-based backends return a `PendingKeyedSnapshot` whose asynchronous phase
   * writes the files. With `savepoint` the result must be self-contained (no file shared with checkpoints).
   */
  snapshot(checkpointId?: number, savepoint?: boolean): KeyedStateSnapshot | PendingKeyedSnapshot;
  /**
   * Loads the key groups of `snapshots` that fall in this backend's range; others are ignored (rescaling). Every
   * backend restores every handle kind (a memory savepoint restores into RocksDB and back); files are read through
   * `store`, which the caller passes whenever a handle of kind 'files' is among `snapshots`.
   */
  restore(snapshots: readonly KeyedStateHandle[], store?: SharedStateStore): void | Promise<void>;
  /**
   * Timers found in restored state files (written by a backend that keeps timers as keyed state, see
   * timer-state.ts) that this backend does not keep itself: the caller passes them to the operator's timer service.
   * Returns each timer once; absent on backends that keep restored timers.
   */
  takeRestoredTimers?(): TimerKeyGroupSnapshot[];
  /** Checkpoint `checkpointId` is complete (file-based backends release files and mark their local state). */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;

  dispose(): void | Promise<void>;
}

/** A file of keyed state in checkpoint storage's shared area; one file can belong to many checkpoints. */
export interface SharedStateFileRef {
  /** Storage-relative path, as `SharedStateStore.put` returned it. */
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * Keyed state kept in files (the RocksDB backend's incremental checkpoints): a full materialisation followed by
 * the changelog segments written since, oldest first. Applying them in order gives the state of `checkpointId`.
 */
export interface FileKeyedStateSnapshot {
  readonly kind: 'files';
  readonly checkpointId: number;
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly files: readonly SharedStateFileRef[];
}

/** What a checkpoint stores for one operator's keyed state. Plain snapshots have no `kind`. */
export type KeyedStateHandle = KeyedStateSnapshot | FileKeyedStateSnapshot;

export function isFileKeyedStateSnapshot(handle: KeyedStateHandle): handle is FileKeyedStateSnapshot {
  return (handle as { kind?: unknown }).kind === 'files';
}

/**
 * The shared area of a checkpoint storage (or of one savepoint). `put` is idempotent for a name: a retried
 * asynchronous phase may put the same file again. Names must be unique across jobs' attempts and subtasks.
 */
export interface SharedStateStore {
  /**
   * Identifies the shared area (e.g. its root path or URI). Two store objects with the same location hold the same
   * files, so a backend that restored from one may list those files in checkpoints written through the other.
   * Without it, only the same object counts as the same area.
   */
  readonly location?: string;
  /**
   * Stores the file at `localPath` as `name`; durable when it resolves. The store may take the local file over
   * (move it rather than copy it): the caller must not use it afterwards except to delete it.
   */
  put(name: string, localPath: string): Promise<SharedStateFileRef>;
  /** Copies a shared file to `localPath`, verifying its size and sha256 (typed, non-retriable error otherwise). */
  get(ref: SharedStateFileRef, localPath: string): Promise<void>;
}

/** The asynchronous rest of a file-based backend's snapshot. */
export interface PendingKeyedSnapshot {
  readonly kind: 'pending';
  /** Writes the files that are new since the previous checkpoint and returns the handle to store. */
  complete(store: SharedStateStore): Promise<FileKeyedStateSnapshot>;
}

export function isPendingKeyedSnapshot(value: unknown): value is PendingKeyedSnapshot {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'pending';
}
