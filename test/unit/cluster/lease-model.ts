import type { LeaseItem, WorkerHeartbeatItem } from '../../../lib/cluster/control-items.ts';
import {
  decideLeaseRound,
  observeLeases,
  observeWorkers,
  renewalOverdue,
  type AskedHandoff,
  type HeldLease,
  type ObservedWorker,
} from '../../../lib/cluster/lease-decisions.ts';
import type { ObservedLease } from '../../../lib/cluster/ports.ts';

/**
 * A model of the control table's lease and heartbeat items with the same conditional writes the DynamoDB adapter
 * makes, and of workers that run `decideLeaseRound` over it as the lease keeper does. Each worker has its own clock
 * (offset and rate against the model's real time), can be paused (a SIGSTOP: no rounds) or cut off (every call
 * fails). Real time moves only through `advance`; a round happens at one instant.
 */
export interface ModelWorker {
  readonly id: string;
  readonly offset: number;
  readonly rate: number;
  held: HeldLease[];
  leases: Map<number, ObservedLease>;
  workers: Map<string, ObservedWorker>;
  asked: Map<number, AskedHandoff>;
  paused: boolean;
  cutOff: boolean;
}

export class LeaseModel {
  time = 0;
  readonly leases = new Map<number, LeaseItem>();
  readonly heartbeats = new Map<string, WorkerHeartbeatItem>();
  leaseGeneration = 0;
  /** Every (slot, epoch) a worker ever started with, and who: an epoch must never be started twice. */
  readonly started = new Map<string, string>();

  constructor(
    readonly slotCount: number,
    readonly leaseDurationMs: number,
    readonly workers: ModelWorker[],
  ) {}

  static worker(id: string, offset = 0, rate = 1): ModelWorker {
    return { id, offset, rate, held: [], leases: new Map(), workers: new Map(), asked: new Map(), paused: false, cutOff: false };
  }

  now(w: ModelWorker): number {
    return w.offset + w.rate * this.time;
  }

  advance(ms: number): void {
    this.time += ms;
  }

  /** The slots a worker believes it may run right now: held and renewed within 2/3 of the lease on its own clock. */
  believed(w: ModelWorker): number[] {
    return w.held.filter((h) => !renewalOverdue(h, this.now(w), this.leaseDurationMs)).map((h) => h.slot);
  }

  private start(w: ModelWorker, slot: number, epoch: number, now: number): void {
    const key = `${slot}@${epoch}`;
    const before = this.started.get(key);
    if (before !== undefined) throw new Error(`slot ${slot} epoch ${epoch} started by ${before} and again by ${w.id}`);
    this.started.set(key, w.id);
    w.held.push({ slot, epoch, renewedAt: now });
  }

  /** One lease-keeper round of worker `w`, as DynamoDbLeaseKeeper runs it. `handOver`: the runtime agrees at once. */
  round(w: ModelWorker, handOver = true): void {
    if (w.paused) return;
    const now = this.now(w);
    const L = this.leaseDurationMs;
    w.held = w.held.filter((h) => !renewalOverdue(h, now, L));
    if (w.cutOff) return;
    // Renew: conditioned on owner and epoch.
    w.held = w.held.flatMap((h) => {
      const item = this.leases.get(h.slot);
      if (item?.owner !== w.id || item.epoch !== h.epoch) return [];
      this.leases.set(h.slot, { ...item, counter: item.counter + 1 });
      return [{ ...h, renewedAt: now }];
    });
    const beat = this.heartbeats.get(w.id);
    this.heartbeats.set(w.id, { workerId: w.id, counter: (beat?.counter ?? 0) + 1, at: now });

    w.leases = observeLeases(w.leases, [...this.leases.values()], now);
    w.workers = observeWorkers(w.workers, [...this.heartbeats.values()].filter((h) => h.workerId !== w.id), now);
    const d = decideLeaseRound({
      workerId: w.id,
      slotCount: this.slotCount,
      leases: [...w.leases.values()],
      workers: [...w.workers.values()],
      held: w.held,
      asked: w.asked,
      leaseDurationMs: L,
      maxSlots: Infinity,
      now,
    });
    const lost = new Set(d.lose.map((l) => l.slot));
    w.held = w.held.filter((h) => !lost.has(h.slot));
    for (const a of d.adopt) {
      w.asked.delete(a.slot);
      // The handoff wrote the counter long ago perhaps: the slot is ours only from a renewal we send now.
      const item = this.leases.get(a.slot);
      if (item?.owner !== w.id || item.epoch !== a.epoch) continue;
      this.leases.set(a.slot, { ...item, counter: item.counter + 1 });
      w.held.push({ slot: a.slot, epoch: a.epoch, renewedAt: now });
    }
    for (const t of d.take) {
      const item = this.leases.get(t.slot);
      const matches =
        t.observed === undefined
          ? item === undefined
          : item !== undefined && item.owner === t.observed.owner && item.epoch === t.observed.epoch && item.counter === t.observed.counter;
      if (!matches) continue;
      const epoch = (item?.epoch ?? 0) + 1;
      this.leases.set(t.slot, { slot: t.slot, owner: w.id, epoch, counter: (item?.counter ?? 0) + 1 });
      this.leaseGeneration++;
      w.asked.delete(t.slot);
      this.start(w, t.slot, epoch, now);
    }
    for (const a of d.ask) {
      const item = this.leases.get(a.slot);
      if (item === undefined || item.owner !== a.observed.owner || item.epoch !== a.observed.epoch || item.pendingOwner !== a.observed.pendingOwner) continue;
      this.leases.set(a.slot, { ...item, pendingOwner: w.id });
      w.asked.set(a.slot, { from: item.owner ?? '', epoch: item.epoch });
    }
    if (!handOver) return;
    for (const r of d.handoffRequested) {
      const item = this.leases.get(r.slot);
      if (item?.owner !== w.id || item.epoch !== r.epoch || item.pendingOwner !== r.to) continue;
      this.leases.set(r.slot, { slot: r.slot, owner: r.to, epoch: item.epoch + 1, counter: item.counter + 1 });
      this.leaseGeneration++;
      w.held = w.held.filter((h) => h.slot !== r.slot);
      // The new owner starts it when its next round adopts it; record the epoch for it now.
      this.started.set(`${r.slot}@${item.epoch + 1}`, r.to);
    }
  }
}
