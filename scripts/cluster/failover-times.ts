// A failover split in two from the cluster's log: detection (SIGKILL -> the survivor's `lease-acquired`: the lease
// running out on the survivor's clock plus its keeper round) and restore (`lease-acquired` -> `slot-started` at that
// epoch: directories, state from the shared state dir or S3, tasks opened).
import type { Logged } from './local-cluster.ts';

export interface FailoverTimes {
  /** SIGKILL to the last of the slots' leases taken by another worker. */
  readonly detectMs: number;
  /** The longest take -> slot-started of the slots, as this process saw the events. */
  readonly restoreMs: number;
  /** The longest restore the workers reported (`slot-started`'s own `ms`). */
  readonly restoreReportedMs: number;
  /** How the slots restored: `local`, `s3`, `fresh`, or several joined by `+`. */
  readonly restore: string;
}

/** Undefined while some slot has not started elsewhere since `killedAt`, or when the victim held no slot. */
export function failoverTimes(log: readonly Logged[], victim: string, slots: readonly number[], killedAt: number): FailoverTimes | undefined {
  if (slots.length === 0) return undefined;
  let detectMs = 0;
  let restoreMs = 0;
  let restoreReportedMs = 0;
  const kinds = new Set<string>();
  for (const slot of slots) {
    const mine = (l: Logged): boolean => l.at >= killedAt && l.source.startsWith('worker:') && l.source !== `worker:${victim}` && l.event['slot'] === slot;
    const acquired = log.find((l) => mine(l) && l.event['event'] === 'lease-acquired');
    if (acquired === undefined) return undefined;
    const started = log.find((l) => mine(l) && l.at >= acquired.at && l.event['event'] === 'slot-started' && l.event['epoch'] === acquired.event['epoch']);
    if (started === undefined) return undefined;
    detectMs = Math.max(detectMs, acquired.at - killedAt);
    restoreMs = Math.max(restoreMs, started.at - acquired.at);
    if (typeof started.event['ms'] === 'number') restoreReportedMs = Math.max(restoreReportedMs, started.event['ms']);
    kinds.add(String(started.event['restore']));
  }
  return { detectMs, restoreMs, restoreReportedMs, restore: [...kinds].sort().join('+') };
}
