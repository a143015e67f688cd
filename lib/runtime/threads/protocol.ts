import type { MessagePort } from 'node:worker_threads';
import type { BarrierElement, FencingToken } from '../../core/index.ts';
import type { JobOptions } from '../../contracts/job-options.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import type { CheckpointMetadata, TaskId, TaskStateHandle } from '../../checkpoint/types.ts';
import type { TaskMetrics } from '../task-metrics.ts';
import type { StateBackendConfig } from '../state-backend-config.ts';
import type { SerializedError } from './remote-error.ts';
import type { PlacementTable } from '../placement.ts';

/** What the coordinating thread gives each worker thread. */
export interface WorkerInit {
  readonly modulePath: string;
  readonly flags: Record<string, unknown>;
  readonly jobOptions: JobOptions;
  readonly thread: number;
  /** The fencing token of this attempt, the same in every thread. */
  readonly fencing: FencingToken;
  /** The worker thread of every task (vertex id -> thread of each subtask), the same table in every thread. */
  readonly placement: PlacementTable;
  readonly fingerprint: string;
  readonly splits: [number, SourceSplit[]][];
  readonly ports: Record<string, MessagePort>;
  /** Checkpoint folder, when the job takes checkpoints. */
  readonly checkpointDir: string | undefined;
  /** Location schemes and the modules that open them (see lib/storage/storage-locations.ts). */
  readonly storageSchemes?: Readonly<Record<string, string>>;
  readonly stateBackend: Required<StateBackendConfig>;
  /** The checkpoint to start from. */
  readonly restoreFrom: CheckpointMetadata | undefined;
  /**
   * Where `restoreFrom`'s task files are when it is a savepoint (or another checkpoint folder), not in
   * `checkpointDir`: a local path or a URI of a registered scheme, opened with openSnapshotAt.
   */
  readonly restoreLocation?: string | undefined;
}

/** Worker -> coordinating thread. */
export type WorkerMessage =
  | { readonly type: 'done'; readonly metrics: TaskMetrics[] }
  | { readonly type: 'failed'; readonly error: SerializedError }
  /** Acks and declines carry the sender's token: the coordinating thread refuses one from an older attempt. */
  | { readonly type: 'ack'; readonly checkpointId: number; readonly handle: TaskStateHandle; readonly fencing: FencingToken }
  | { readonly type: 'decline'; readonly checkpointId: number; readonly task: TaskId; readonly reason: string; readonly fencing: FencingToken }
  | { readonly type: 'sourceFinished'; readonly task: TaskId }
  /** Every task of the thread ran its completion hooks (sink commits) for `checkpointId`. */
  | { readonly type: 'notified'; readonly checkpointId: number }
  /** A source subtask's watermark for its alignment group (undefined: idle or finished). */
  | { readonly type: 'alignment'; readonly group: string; readonly member: string; readonly watermark: number | undefined }
  /** The answer to a `metrics` request: the thread's task counters now. */
  | { readonly type: 'metrics'; readonly requestId: number; readonly metrics: TaskMetrics[] };

/** Coordinating thread -> worker. */
export type CoordinatorMessage =
  | { readonly type: 'trigger'; readonly barrier: BarrierElement }
  | { readonly type: 'complete'; readonly checkpointId: number; readonly final: boolean }
  | { readonly type: 'metrics'; readonly requestId: number }
  /** The new minimum watermark of an alignment group. */
  | { readonly type: 'alignment'; readonly group: string; readonly minimum: number };
