import type { CheckpointHistoryEntry, CoordinatorState } from '../checkpoint/coordinator-protocol.ts';
import type { ClusterConfigItem, ControlItem, LeaseItem, RequestItem } from './control-items.ts';

/**
 * What `sluice aws status` shows about a cluster job, read from its control table: plain data, no I/O. The
 * adapter (lib/connectors/aws/cluster/job-admin-table.ts) reads the items; the CLI formats them.
 */
export interface ClusterJobStatus {
  readonly jobId: string;
  /** Absent: `sluice aws init` has not run for this job id. */
  readonly config: ClusterConfigItem | undefined;
  readonly control: ControlItem | undefined;
  /** Absent until the coordinator's first handler ran. */
  readonly coordinator: CoordinatorSummary | undefined;
  readonly leases: readonly LeaseStatus[];
  /** Savepoint and stop requests, oldest first. */
  readonly requests: readonly RequestItem[];
}

/** A lease, and whether its counter moved while status watched it (how a taker judges it expired). */
export interface LeaseStatus extends LeaseItem {
  /**
   * How long status watched the counter (ms), and whether it moved meanwhile. A live owner renews every third of
   * the lease duration, so a counter still for longer than that hints at a dead or stalled owner. Absent when
   * status read the leases once only.
   */
  readonly counterWatch?: { readonly watchedMs: number; readonly moved: boolean };
}

export interface CoordinatorSummary {
  readonly execution: string;
  readonly version: number;
  readonly status: CoordinatorState['status'];
  readonly lastCompleted: CheckpointHistoryEntry | undefined;
  readonly inFlight:
    | {
        readonly checkpointId: number;
        readonly savepoint: boolean;
        readonly phase: 'acknowledging' | 'committing';
        readonly triggeredAt: number;
        readonly acknowledged: number;
        readonly waitingFor: number;
      }
    | undefined;
  /** Oldest first, as the coordinator keeps it. */
  readonly history: readonly CheckpointHistoryEntry[];
}

/**
 * Summarizes a stored coordinator state. The state may be stored as a DynamoDB map or as a JSON string; both are
 * accepted, so status keeps working whichever the coordinator writes.
 */
export function summarizeCoordinator(item: { execution: string; version: number; state: CoordinatorState | string }): CoordinatorSummary {
  const state: CoordinatorState = typeof item.state === 'string' ? (JSON.parse(item.state) as CoordinatorState) : item.state;
  const history = state.history ?? [];
  const lastCompleted = [...history].reverse().find((entry) => entry.status === 'completed');
  const inFlight = state.inFlight;
  return {
    execution: item.execution,
    version: item.version,
    status: state.status,
    lastCompleted,
    inFlight:
      inFlight === undefined || inFlight === null
        ? undefined
        : {
            checkpointId: inFlight.checkpointId,
            savepoint: inFlight.savepoint,
            phase: inFlight.phase,
            triggeredAt: inFlight.triggeredAt,
            acknowledged: inFlight.acknowledged.length,
            waitingFor: inFlight.waitingFor.length,
          },
    history,
  };
}

/** Pairs two reads of the leases taken `watchedMs` apart: a counter that changed means a live owner. */
export function watchLeaseCounters(first: readonly LeaseItem[], second: readonly LeaseItem[], watchedMs: number): LeaseStatus[] {
  const before = new Map(first.map((lease) => [lease.slot, lease]));
  return second.map((lease) => {
    const earlier = before.get(lease.slot);
    if (earlier === undefined) return lease;
    const moved = earlier.counter !== lease.counter || earlier.epoch !== lease.epoch || earlier.owner !== lease.owner;
    return { ...lease, counterWatch: { watchedMs, moved } };
  });
}
