/**
 * Plain-data types of the checkpoint protocol, shared by the coordinator, the tasks and checkpoint storage.
 * No I/O here (ARCHITECTURE.md rule 1).
 */
import type { FencingToken } from '../core/fencing.ts';

/** Identifies one task: a vertex of the physical plan and a subtask index. */
export interface TaskId {
  readonly vertex: number;
  readonly subtask: number;
}

/** Where a task's snapshot was written, as the task reports it in its acknowledgement. */
export interface TaskStateHandle {
  readonly task: TaskId;
  /** Name of the vertex, for humans reading the metadata. */
  readonly vertexName: string;
  /** Storage-relative path of the file holding the task's state. */
  readonly path: string;
  readonly bytes: number;
  /** Hex SHA-256 of the file's bytes; a mismatch marks the checkpoint as corrupt. */
  readonly sha256: string;
  /** How long the task stopped processing to copy its state (the synchronous phase), in ms. Absent in older metadata. */
  readonly syncMs?: number;
  /** From the end of the synchronous phase to the acknowledgement: encoding, writing and hashing the copy, in ms. */
  readonly asyncMs?: number;
  /**
   * Shared state files (storage-relative paths, e.g. "shared/…") the task's state refers to: incremental keyed state
   * that several checkpoints share. Retention keeps a shared file while any kept checkpoint lists it.
   */
  readonly sharedFiles?: readonly SharedFileEntry[];
}

/** A shared state file as the metadata lists it. */
export interface SharedFileEntry {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** What makes a checkpoint complete: written atomically after every task acknowledged. */
export interface CheckpointMetadata {
  /** Format version of the metadata and of the task state files it lists. */
  readonly version: number;
  readonly checkpointId: number;
  readonly savepoint: boolean;
  /** Epoch ms. */
  readonly triggeredAt: number;
  readonly completedAt: number;
  /** Key groups of the job; a restore with another value is refused. */
  readonly maxParallelism: number;
  /** Parallelism of each vertex when the checkpoint was taken, by vertex id. */
  readonly parallelism: Readonly<Record<number, number>>;
  readonly tasks: readonly TaskStateHandle[];
  /**
   * Tasks that had finished for good (all their input read and emitted) before acknowledging this checkpoint, so
   * they have no state in it; a restore must not start them from scratch. Absent when there are none.
   */
  readonly finishedTasks?: readonly TaskId[];
  /**
   * What each operator's state means, so that a restore into a job whose operator reads it differently is refused.
   * Absent in checkpoints written before it was recorded: those restore unchecked.
   */
  readonly operators?: readonly OperatorStateRecord[];
  /**
   * The fencing token of the attempt that wrote this checkpoint. A new run starts above the highest epoch it finds,
   * and a component that already serves a newer epoch refuses this one. Absent in checkpoints written before it
   * was recorded (read as epoch 0).
   */
  readonly fencing?: FencingToken;
}

/** Properties of an operator that decide how its state reads (window size, accumulator shape, state version, ...). */
export type StateMeaning = Readonly<Record<string, string | number>>;

/** One operator (or source) of the job that wrote a checkpoint. */
export interface OperatorStateRecord {
  /** Its logical node id in that job. */
  readonly nodeId: number;
  /** The vertex (operator chain) that ran it; the task files are per vertex. */
  readonly vertex: number;
  readonly name: string;
  /** It keeps state a restore must place: keyed state, operator state (sink transactions), source positions. */
  readonly stateful: boolean;
  readonly meaning: StateMeaning;
}

export const CHECKPOINT_FORMAT_VERSION = 1;
