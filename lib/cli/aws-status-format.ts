import type { ClusterJobStatus, LeaseStatus } from '../cluster/job-status.ts';

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function leaseLine(lease: LeaseStatus): string {
  const owner = lease.owner === undefined ? 'released' : `owner ${lease.owner}`;
  const pending = lease.pendingOwner === undefined ? '' : `, handing over to ${lease.pendingOwner}`;
  const watch = lease.counterWatch;
  const counter =
    watch === undefined
      ? `counter ${lease.counter}`
      : watch.moved
        ? `counter ${lease.counter} (moved within ${seconds(watch.watchedMs)})`
        : `counter ${lease.counter} (still for at least ${seconds(watch.watchedMs)})`;
  return `  slot ${lease.slot}: ${owner}, epoch ${lease.epoch}, ${counter}${pending}`;
}

/** `sluice aws status` as text: config, control, coordinator, leases, open requests. */
export function formatClusterStatus(status: ClusterJobStatus, now: number): string[] {
  const lines: string[] = [];
  const config = status.config;
  if (config === undefined) return [`job ${status.jobId}: not initialized (run "sluice aws init")`];
  lines.push(
    `job ${status.jobId}: ${config.parallelism} slots, max parallelism ${config.maxParallelism}, fingerprint ${config.fingerprint.slice(0, 12)}`,
    `  checkpoints: ${config.checkpointDir}${config.restoreFrom === undefined ? '' : `, first run restores ${config.restoreFrom}`}`,
    `  edges: ${config.edges.length === 0 ? 'none' : config.edges.map((e) => `${e.id} ${e.mode}`).join(', ')}${config.exchangeStream === undefined ? '' : ` (exchange stream ${config.exchangeStream})`}`,
  );
  const control = status.control;
  if (control !== undefined) {
    const completed = control.completed === undefined ? 'none yet' : `${control.completed.checkpointId} (${control.completed.metadataPath})`;
    const trigger = control.trigger === undefined ? '' : `, last trigger ${control.trigger.checkpointId}${control.trigger.savepoint ? ' (savepoint)' : ''}`;
    lines.push(
      `control: completed ${completed}${trigger}, sinks committed through ${control.sinkCommittedThrough}, lease generation ${control.leaseGeneration}`,
    );
    if (control.halted !== undefined) lines.push(`  halted after savepoint ${control.halted.checkpointId}: ${control.halted.savepointPath}`);
    if (control.resumed !== undefined && control.halted === undefined) {
      lines.push(`  resumed from savepoint ${control.resumed.checkpointId}: ${control.resumed.savepointPath} (request ${control.resumed.requestId})`);
    }
  }
  const coordinator = status.coordinator;
  if (coordinator === undefined) {
    lines.push('coordinator: not started');
  } else {
    lines.push(`coordinator: ${coordinator.status}, execution ${coordinator.execution}, version ${coordinator.version}`);
    const last = coordinator.lastCompleted;
    if (last !== undefined) {
      lines.push(`  last completed: ${last.checkpointId}${last.savepoint ? ' (savepoint)' : ''}, ${seconds(now - last.triggeredAt)} ago, took ${last.durationMs ?? '?'} ms`);
    }
    const flight = coordinator.inFlight;
    if (flight !== undefined) {
      lines.push(
        `  in flight: ${flight.checkpointId}${flight.savepoint ? ' (savepoint)' : ''}, ${flight.phase}, ${flight.acknowledged} acked, waiting for ${flight.waitingFor}, for ${seconds(now - flight.triggeredAt)}`,
      );
    }
    const recent = coordinator.history.slice(-5);
    if (recent.length > 0) {
      lines.push(`  history: ${recent.map((h) => `${h.checkpointId} ${h.status}${h.failureReason === undefined ? '' : ` (${h.failureReason})`}`).join(', ')}`);
    }
  }
  lines.push(`leases (${status.leases.length}):`, ...status.leases.map(leaseLine));
  const open = status.requests.filter((r) => r.status === 'queued' || r.status === 'running');
  if (open.length > 0) lines.push('open requests:', ...open.map((r) => `  ${r.kind} ${r.id}: ${r.status} since ${seconds(now - r.requestedAt)}`));
  return lines;
}
