import type { CoordinatorCommand, CoordinatorState } from '../checkpoint/coordinator-protocol.ts';
import type { TaskId, TaskStateHandle } from '../checkpoint/types.ts';

/**
 * The items of a cluster job's DynamoDB control table, as plain data. One partition per job (`job#<id>`), one item
 * per sort key below. The worker half (leases, acks, control polling) and the coordinator half (Step Functions
 * handlers) read and write them through their own adapters in lib/connectors/aws/cluster; this file is the contract
 * both sides share, so it has no I/O and no AWS types.
 *
 * Fencing: every take, handoff or local restart of a slot increments the slot's `epoch` and the job-wide
 * `ControlItem.leaseGeneration` in one transaction. An ack is conditioned on the lease's owner and epoch; a
 * checkpoint's metadata commit is conditioned on the `leaseGeneration` recorded with its trigger, so a takeover
 * while a checkpoint is in flight aborts that checkpoint. A zombie changes nothing.
 */

/** Partition key attribute name and sort key attribute name of the control table. */
export const CONTROL_TABLE_PARTITION_KEY = 'pk';
export const CONTROL_TABLE_SORT_KEY = 'sk';

export function jobPartition(jobId: string): string {
  return `job#${jobId}`;
}

/** Sort keys. Checkpoint ids are zero-padded so that a Query with `begins_with(sk, 'ack#<id>#')` lists one checkpoint. */
export const ControlKeys = {
  config: 'config',
  coordinator: 'coordinator',
  control: 'control',
  lease: (slot: number): string => `lease#${String(slot).padStart(5, '0')}`,
  leasePrefix: 'lease#',
  ack: (checkpointId: number, slot: number): string => `${ackPrefix(checkpointId)}${String(slot).padStart(5, '0')}`,
  ackPrefix,
  request: (requestId: string): string => `request#${requestId}`,
  requestPrefix: 'request#',
  /** A worker's heartbeat (`WorkerHeartbeatItem`), so that a worker holding no lease still counts as live. */
  worker: (workerId: string): string => `worker#${workerId}`,
  workerPrefix: 'worker#',
} as const;

function ackPrefix(checkpointId: number): string {
  return `ack#${String(checkpointId).padStart(12, '0')}#`;
}

/** How records cross a network edge of the plan in the cluster. */
export type EdgeMode =
  /** Forward: producer and consumer subtask are the same slot, a local channel in the worker. */
  | 'local'
  /** keyBy with `keyGroups: 'kinesis-hash'` right behind a Kinesis source: each slot reads only its key groups. */
  | 'aligned'
  /** Any other keyBy, rebalance or broadcast: through the internal exchange stream, read-committed. */
  | 'exchange';

export interface ClusterEdgeConfig {
  /** The physical edge id (`PhysicalEdge.id`) as a string. */
  readonly id: string;
  readonly fromVertex: number;
  readonly toVertex: number;
  readonly mode: EdgeMode;
  /** Key-group hash of a keyed edge: `murmur` (the engine's default) or `kinesis-hash` (MD5 of the partition key). */
  readonly keyGroupHash?: 'murmur' | 'kinesis-hash';
}

/** `config`: written once by `sluice aws init`; every worker and handler checks it before doing anything. */
export interface ClusterConfigItem {
  /** `PhysicalPlan.fingerprint` plus the edge modes and key-group hashes (see lib/graph/slot-plan.ts). */
  readonly fingerprint: string;
  /** P: the number of slots; every vertex runs at this parallelism. */
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly edges: readonly ClusterEdgeConfig[];
  /** `s3://bucket/prefix` of the checkpoint storage. */
  readonly checkpointDir: string;
  /** The internal Kinesis stream of P shards, when any edge is `exchange`. */
  readonly exchangeStream?: string;
  /** The coordinator's options (interval, timeout, min pause, retained, tolerable failures), as JSON. */
  readonly checkpointing: Readonly<Record<string, number>>;
  /** Every task of the plan (vertex, subtask): what the coordinator expects acks from. */
  readonly tasks: readonly TaskId[];
  /** Source tasks, for the coordinator's `sourceTasks`. */
  readonly sourceTasks: readonly TaskId[];
  /** Two-phase-commit sinks the coordinator commits, by sink operator (node) id, from their `externalCommit`. */
  readonly sinks: readonly ClusterSinkConfig[];
  /** Where the job starts from on its very first run (`--restore`), as a storage URI. */
  readonly restoreFrom?: string;
  readonly createdAt: number;
}

/** A two-phase-commit sink's JSON descriptor: enough for the coordinator to commit without loading job code. */
export interface ClusterSinkConfig {
  /** The sink operator's logical node id. */
  readonly nodeId: number;
  readonly name: string;
  /** `TwoPhaseCommitSink.externalCommit`, e.g. `{ kind: 'dynamodb', ... }`. */
  readonly externalCommit: ExternalCommitDescriptor;
}

/** JSON that names a committer in the coordinator's registry (`kind`) and carries its settings. */
export interface ExternalCommitDescriptor {
  readonly kind: string;
  readonly [setting: string]: unknown;
}

/** `lease#<slot>`: who runs slot `slot` (as the Kinesis Client Library's lease items, plus the fencing epoch). */
export interface LeaseItem {
  readonly slot: number;
  /** Worker id of the owner; absent when released. */
  readonly owner?: string;
  /** Fencing epoch of the slot: +1 at every take, handoff and local restart. */
  readonly epoch: number;
  /** +1 at every renewal; a taker sees the lease as expired when it has not moved for `leaseDurationMs` on its own clock. */
  readonly counter: number;
  /** Set by a worker that wants the slot: the owner stops the slot at a checkpoint and hands it over. */
  readonly pendingOwner?: string;
}

/**
 * `worker#<id>`: a worker's heartbeat, +1 every lease-keeper round. Balancing divides the slots among the live
 * workers; the Kinesis Client Library counts lease owners only, so a worker that holds no lease yet would never get
 * one. It expires as a lease does: its counter has not moved for `leaseDurationMs` on the reader's clock.
 */
export interface WorkerHeartbeatItem {
  readonly workerId: string;
  readonly counter: number;
  /** The worker's own clock (ms) at its latest beat: for people reading the table, never for expiry decisions. */
  readonly at: number;
}

/** The checkpoint the coordinator asked for: workers inject its barrier at their sources and exchange receivers. */
export interface ControlTrigger {
  readonly checkpointId: number;
  readonly savepoint: boolean;
  /** Epoch ms; barriers and metadata carry it. */
  readonly timestamp: number;
  /** `ControlItem.leaseGeneration` when triggered: the metadata commit is conditioned on it being unchanged. */
  readonly leaseGeneration: number;
  /** The savepoint of a stop: after it completes, workers stop their slots and release. */
  readonly stop?: boolean;
}

/** `control`: the one item workers poll (consistent read, every `controlPollMs`). */
export interface ControlItem {
  readonly trigger?: ControlTrigger;
  /** The latest completed checkpoint (not savepoints), and its metadata's storage-relative path. */
  readonly completed?: {
    readonly checkpointId: number;
    readonly metadataPath: string;
    /**
     * The epoch of every slot's ack that completed the checkpoint, indexed by slot. Exchange receivers need it: a
     * zombie of an older epoch may write markers for the same checkpoint, and only the acking epoch's count.
     * Absent in items written before it was added (then exchange edges cannot be read).
     */
    readonly slotEpochs?: readonly number[];
  };
  /** +1 with every lease take, handoff or local restart (fencing of metadata commits). */
  readonly leaseGeneration: number;
  /** The highest checkpoint whose sink committables are all committed. */
  readonly sinkCommittedThrough: number;
  /** Set once a stop's savepoint completed: workers stop every slot and release its lease. */
  readonly halted?: { readonly checkpointId: number; readonly savepointPath: string };
  /**
   * Set by a resume of a halted job (the control state machine's `resume`), which removes `halted` and `completed`
   * and sets `config.restoreFrom` to the stop savepoint in the same transaction: slots restore from that savepoint
   * and the next Recover starts a new coordinator. `requestId` makes a retried resume a no-op.
   */
  readonly resumed?: { readonly requestId: string; readonly checkpointId: number; readonly savepointPath: string; readonly at: number };
}

/** The sink committables of one slot for one checkpoint, written as one object beside its task states. */
export interface SlotCommittablesRef {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** `ack#<checkpoint>#<slot>`: one per slot and checkpoint, put in a transaction with a lease owner+epoch check. */
export type AckItem =
  | {
      readonly kind: 'ack';
      readonly checkpointId: number;
      readonly slot: number;
      readonly owner: string;
      readonly epoch: number;
      /** One handle per task of the slot (subtask `slot` of every vertex). */
      readonly handles: readonly TaskStateHandle[];
      /** Tasks of the slot that had finished for good before this checkpoint. */
      readonly finishedTasks?: readonly TaskId[];
      /** Absent when the slot has no two-phase-commit sink. */
      readonly committables?: SlotCommittablesRef;
      readonly at: number;
    }
  | {
      readonly kind: 'decline';
      readonly checkpointId: number;
      readonly slot: number;
      readonly owner: string;
      readonly epoch: number;
      readonly reason: string;
      readonly at: number;
    };

/** `coordinator`: the pure CheckpointCoordinator's JSON state, owned by one supervisor execution at a time. */
export interface CoordinatorItem {
  /** Optimistic concurrency: every write is conditioned on the version read, and increments it. */
  readonly version: number;
  /** The supervisor execution that owns the coordinator; a handler of another execution ends `Superseded`. */
  readonly execution: string;
  readonly state: CoordinatorState;
  /**
   * A metadata commit in progress: the exact bytes persisted before the first try, so a retried handler writes the
   * same object, and the lease generation of its trigger. The bytes are staged as an object in the checkpoint's
   * folder (`staged`), not kept here: they repeat every task handle that `state` holds already, and the item must
   * stay under DynamoDB's 400 KB. `metadataJson`: the bytes inline, as items written before staging hold them.
   */
  readonly pendingCommit?: {
    readonly checkpointId: number;
    readonly staged?: { readonly path: string; readonly bytes: number; readonly sha256: string };
    readonly metadataJson?: string;
    readonly leaseGeneration: number;
    /** A savepoint: written to the savepoint area instead of committed as a checkpoint. Absent: a checkpoint. */
    readonly savepoint?: boolean;
  };
  /**
   * Commands of the last step that are not carried out yet, persisted with the state they came from so that a
   * handler that dies halfway leaves them to the next one (each is idempotent). Absent: none.
   */
  readonly outbox?: readonly CoordinatorCommand[];
  /** `request#` ids the coordinator has taken, with the savepoint request id it gave each. Absent: none. */
  readonly requests?: Readonly<Record<string, number>>;
  /** Committables objects of the in-flight checkpoint, by slot, from the acks applied so far. Absent: none. */
  readonly inFlightCommittables?: { readonly checkpointId: number; readonly bySlot: Readonly<Record<string, SlotCommittablesRef>> };
  /**
   * As stored: the in-flight checkpoint's acknowledged handles are kept without their `sharedFiles` (the incremental
   * chains, most of the item's bytes at scale), which the ack items of that checkpoint still hold; reading the item
   * puts them back. Absent in memory and in items written before.
   */
  readonly sharedFilesInAcks?: boolean;
  /** Completed checkpoints (and stop savepoints) whose sink committables are not all committed yet, oldest first. */
  readonly sinkCommits?: readonly { readonly checkpointId: number; readonly refs: readonly SlotCommittablesRef[] }[];
}

/** `request#<id>`: a savepoint or stop asked for by `sluice aws savepoint|stop` (or the console). */
export interface RequestItem {
  readonly id: string;
  readonly kind: 'savepoint' | 'stop';
  readonly status: 'queued' | 'running' | 'succeeded' | 'failed';
  readonly requestedAt: number;
  readonly requestedBy?: string;
  readonly result?: { readonly checkpointId: number; readonly path: string };
  readonly error?: string;
  readonly updatedAt: number;
}
