import type { AckItem, ClusterConfigItem, ControlItem, LeaseItem } from './control-items.ts';

/**
 * What a cluster worker's runtime (lib/runtime/cluster) needs from the outside world, as interfaces. The AWS
 * implementations live in lib/connectors/aws/cluster and are wired in by the worker's composition root
 * (functions/worker/main.ts); tests may pass in-memory ones. Types only: no I/O here.
 */

/** The job's control items, read by a worker (consistent reads). */
export interface ControlReader {
  readConfig(): Promise<ClusterConfigItem | undefined>;
  readControl(): Promise<ControlItem | undefined>;
}

/** Result of a fenced write: `fenced` when the lease's owner or epoch no longer matches (nothing was written). */
export type FencedWriteResult = 'written' | 'fenced';

/** Puts one ack or decline item on the condition that the lease still names this owner and epoch. */
export interface AckWriter {
  putAck(ack: AckItem): Promise<FencedWriteResult>;
}

/** A slot this worker holds, with the epoch that fences everything the slot writes. */
export interface HeldSlot {
  readonly slot: number;
  readonly epoch: number;
}

/** What the lease keeper reports to the worker runtime. */
export type LeaseEvent =
  /** The slot is ours at `epoch`: start it (restore it from the latest completed checkpoint). */
  | { readonly kind: 'acquired'; readonly slot: number; readonly epoch: number; readonly previousOwner?: string }
  /** Renewal refused or none succeeded for 2/3 of the lease: stop the slot at once, write nothing more. */
  | { readonly kind: 'lost'; readonly slot: number; readonly epoch: number; readonly reason: string }
  /** Another worker asked for the slot (`pendingOwner`): stop it at a checkpoint, then `handOver`. */
  | { readonly kind: 'handoffRequested'; readonly slot: number; readonly epoch: number; readonly to: string };

/**
 * Takes, renews, balances and releases slot leases for one worker (as the Kinesis Client Library does, plus
 * fencing). Every take, handoff and local restart is one transaction that also increments the job's lease generation.
 */
export interface SlotLeaseKeeper {
  readonly workerId: string;
  /** Starts taking and renewing; events arrive through `onEvent` until `close`. */
  start(onEvent: (event: LeaseEvent) => void): void;
  /** Slots held now. */
  held(): readonly HeldSlot[];
  /** A slot failed and restarts on this worker: a new epoch for the same owner (one transaction). Returns it. */
  restartLocally(slot: HeldSlot): Promise<HeldSlot>;
  /** Gives the slot to the worker named in `pendingOwner` (after the slot stopped at a checkpoint). */
  handOver(slot: HeldSlot): Promise<void>;
  /** Releases the slot (owner removed) so any worker may take it at once. */
  release(slot: HeldSlot): Promise<void>;
  /** Stops renewing and taking; does not release (call `release` per slot first for a graceful exit). */
  close(): Promise<void>;
}

/** A lease item as a pure decision function sees it, with when this worker last saw its counter move. */
export interface ObservedLease {
  readonly lease: LeaseItem;
  /** This worker's clock (ms) when it last saw `lease.counter` change (or first saw the item). */
  readonly counterChangedAt: number;
}
