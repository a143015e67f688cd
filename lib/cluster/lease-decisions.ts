import type { LeaseItem, WorkerHeartbeatItem } from './control-items.ts';
import type { HeldSlot, ObservedLease } from './ports.ts';

/**
 * What a worker's lease keeper does in one round, decided from what it observed (as the Kinesis Client Library's
 * LeaseTaker does, plus fencing and graceful handoff). Pure: no I/O, and the clock is an input, so every rule here
 * is tested with plain numbers. All times are this worker's own clock in ms; nothing compares clocks of two workers.
 *
 * Safety rests on two thresholds: a taker treats a lease as expired only when its counter has not moved for a whole
 * `leaseDurationMs` on the taker's clock, while the owner stops the slot once no renewal succeeded for 2/3 of it
 * (measured from when the renewal was sent). The third in between absorbs scheduling delays and clock-rate
 * differences; fencing (epoch in every ack, lease generation in every metadata commit) covers what is left.
 */

/** A worker heartbeat as this worker saw it, with when it last saw the counter change (or first saw the item). */
export interface ObservedWorker {
  readonly heartbeat: WorkerHeartbeatItem;
  readonly counterChangedAt: number;
}

/** A slot this worker holds, as its keeper tracks it between rounds. */
export interface HeldLease extends HeldSlot {
  /** When the latest successful renewal (or the take) was sent: the 2/3-of-the-lease deadline counts from here. */
  readonly renewedAt: number;
}

export interface AskedHandoff {
  readonly from: string;
  readonly epoch: number;
}

export interface LeaseRoundInput {
  readonly workerId: string;
  /** P: slots 0..P-1 exist whether or not their lease items do (a missing item is taken with epoch 1). */
  readonly slotCount: number;
  /** Every `lease#` item read this round. */
  readonly leases: readonly ObservedLease[];
  /** Every `worker#` heartbeat read this round (this worker's own included or not). */
  readonly workers: readonly ObservedWorker[];
  readonly held: readonly HeldLease[];
  /** Slots this worker asked for (`pendingOwner`), with the lease's owner and epoch when it asked. */
  readonly asked: ReadonlyMap<number, AskedHandoff>;
  readonly leaseDurationMs: number;
  /** This worker's cap on slots. */
  readonly maxSlots: number;
  readonly now: number;
}

/** Why a lease is taken: no item yet, released by its owner, counter stale, or ours in the table but unknown to us. */
export type TakeReason = 'missing' | 'released' | 'expired' | 'reclaim';

export interface LeaseTake {
  readonly slot: number;
  readonly reason: TakeReason;
  /** The item as read (the take is conditioned on its owner, epoch and counter); absent when the item is missing. */
  readonly observed?: LeaseItem;
}

export interface HandoffAsk {
  readonly slot: number;
  /** The item as read: the ask is conditioned on its owner, epoch and pendingOwner. */
  readonly observed: LeaseItem;
}

export interface LeaseLoss {
  readonly slot: number;
  readonly epoch: number;
  readonly reason: string;
}

export interface LeaseRoundDecision {
  /** Stop these slots at once and write nothing more for them. */
  readonly lose: readonly LeaseLoss[];
  /**
   * Handed over to us as we asked (owner = us, epoch = asked + 1): no new epoch needed, but renew before starting
   * the slot. The handoff may have moved the counter a while ago, and only a renewal sent now keeps takers off it.
   */
  readonly adopt: readonly (HeldSlot & { readonly previousOwner: string })[];
  readonly take: readonly LeaseTake[];
  readonly ask: readonly HandoffAsk[];
  /** Own leases a live worker asked for: stop the slot at a checkpoint, then hand it over. */
  readonly handoffRequested: readonly (HeldSlot & { readonly to: string })[];
  /** ceil(P / live workers), capped by `maxSlots`. */
  readonly target: number;
  readonly liveWorkers: readonly string[];
}

/** Whether no renewal succeeded for 2/3 of the lease: the owner must stop the slot now. */
export function renewalOverdue(held: HeldLease, now: number, leaseDurationMs: number): boolean {
  return now - held.renewedAt >= (2 * leaseDurationMs) / 3;
}

/** When the owner must stop the slot unless a renewal succeeds first. */
export function renewalDeadline(held: HeldLease, leaseDurationMs: number): number {
  return held.renewedAt + (2 * leaseDurationMs) / 3;
}

/** Whether a lease's counter has stood still for a whole lease on this worker's clock (or it has no owner). */
export function leaseExpired(observed: ObservedLease, now: number, leaseDurationMs: number): boolean {
  return observed.lease.owner === undefined || now - observed.counterChangedAt >= leaseDurationMs;
}

function heartbeatLive(worker: ObservedWorker, now: number, leaseDurationMs: number): boolean {
  return now - worker.counterChangedAt < leaseDurationMs;
}

/** Whether a heartbeat has been dead long enough to delete its item (any worker may, conditioned on its counter). */
export function heartbeatForgettable(worker: ObservedWorker, now: number, leaseDurationMs: number): boolean {
  return now - worker.counterChangedAt >= FORGET_AFTER_LEASES * leaseDurationMs;
}

const FORGET_AFTER_LEASES = 10;

/** Live workers: this one, every live heartbeat, and every owner of an unexpired lease (as the KCL counts them). */
export function liveWorkers(input: Pick<LeaseRoundInput, 'workerId' | 'leases' | 'workers' | 'leaseDurationMs' | 'now'>): string[] {
  const live = new Set<string>([input.workerId]);
  for (const w of input.workers) if (heartbeatLive(w, input.now, input.leaseDurationMs)) live.add(w.heartbeat.workerId);
  for (const l of input.leases) {
    if (l.lease.owner !== undefined && !leaseExpired(l, input.now, input.leaseDurationMs)) live.add(l.lease.owner);
  }
  return [...live].sort();
}

export function decideLeaseRound(input: LeaseRoundInput): LeaseRoundDecision {
  const { workerId: me, now, leaseDurationMs: duration } = input;
  const live = liveWorkers(input);
  const liveSet = new Set(live);
  const target = Math.min(Math.ceil(input.slotCount / live.length), input.maxSlots);
  const bySlot = new Map<number, ObservedLease>();
  for (const l of input.leases) if (l.lease.slot >= 0 && l.lease.slot < input.slotCount) bySlot.set(l.lease.slot, l);
  const heldBySlot = new Map(input.held.map((h) => [h.slot, h]));

  const lose: LeaseLoss[] = [];
  const kept = new Set<number>();
  for (const h of input.held) {
    const seen = bySlot.get(h.slot)?.lease;
    if (renewalOverdue(h, now, duration)) {
      lose.push({ slot: h.slot, epoch: h.epoch, reason: `no renewal succeeded for ${Math.round(now - h.renewedAt)} ms (2/3 of the lease)` });
    } else if (seen === undefined) {
      lose.push({ slot: h.slot, epoch: h.epoch, reason: 'the lease item is gone' });
    } else if (seen.owner !== me || seen.epoch !== h.epoch) {
      lose.push({ slot: h.slot, epoch: h.epoch, reason: `taken by ${seen.owner ?? 'nobody (released)'} at epoch ${seen.epoch}` });
    } else {
      kept.add(h.slot);
    }
  }

  const adopt: (HeldSlot & { previousOwner: string })[] = [];
  const take: LeaseTake[] = [];
  const handoffRequested: (HeldSlot & { to: string })[] = [];
  const free: ObservedLease[] = [];
  const missing: number[] = [];
  let leaving = 0;
  let incoming = 0;
  for (let slot = 0; slot < input.slotCount; slot++) {
    const observed = bySlot.get(slot);
    if (observed === undefined) {
      missing.push(slot);
      continue;
    }
    const lease = observed.lease;
    if (lease.owner === me) {
      if (kept.has(slot)) {
        if (lease.pendingOwner !== undefined && lease.pendingOwner !== me && liveSet.has(lease.pendingOwner)) {
          handoffRequested.push({ slot, epoch: lease.epoch, to: lease.pendingOwner });
          leaving++;
        }
      } else if (!heldBySlot.has(slot)) {
        const asked = input.asked.get(slot);
        if (asked !== undefined && lease.epoch === asked.epoch + 1) adopt.push({ slot, epoch: lease.epoch, previousOwner: asked.from });
        // Ours in the table but not in memory (a lost response, or a restarted process reusing its worker id):
        // take it again so that a new epoch fences whoever wrote with the old one.
        else take.push({ slot, reason: 'reclaim', observed: lease });
      }
      continue;
    }
    if (leaseExpired(observed, now, duration)) free.push(observed);
    else if (lease.pendingOwner === me) incoming++;
  }
  const mine = kept.size - leaving + adopt.length + take.length + incoming;
  let need = Math.min(target, input.maxSlots) - mine;

  // Released and missing leases first (nobody runs them), then those expired longest ago; slot order breaks ties.
  const candidates: LeaseTake[] = [
    ...missing.map((slot): LeaseTake => ({ slot, reason: 'missing' })),
    ...free
      .filter((l) => l.lease.owner === undefined)
      .map((l): LeaseTake => ({ slot: l.lease.slot, reason: 'released', observed: l.lease })),
    ...free
      .filter((l) => l.lease.owner !== undefined)
      .sort((a, b) => a.counterChangedAt - b.counterChangedAt || a.lease.slot - b.lease.slot)
      .map((l): LeaseTake => ({ slot: l.lease.slot, reason: 'expired', observed: l.lease })),
  ];
  const takenBefore = take.length;
  while (need > 0 && candidates.length > 0) {
    take.push(candidates.shift() as LeaseTake);
    need--;
  }
  // A worker capped below the balanced share leaves slots nobody under target wants: after a whole lease unclaimed,
  // take one beyond target (up to maxSlots); balancing hands it on later if someone has room.
  if (take.length === takenBefore && need <= 0 && kept.size + adopt.length + take.length < input.maxSlots) {
    const orphan = candidates.find((c) => {
      const seen = bySlot.get(c.slot);
      if (seen === undefined) return false;
      const freeSince = seen.lease.owner === undefined ? seen.counterChangedAt : seen.counterChangedAt + duration;
      return now - freeSince >= duration;
    });
    if (orphan !== undefined) take.push(orphan);
  }

  const ask: HandoffAsk[] = [];
  if (need > 0 && take.length === takenBefore) ask.push(...handoffAsks(input, bySlot, liveSet, target, need));

  return { lose, adopt, take, ask, handoffRequested, target, liveWorkers: live };
}

/**
 * Leases to ask for from the most loaded live worker (ties: lowest worker id), its highest slots first. A worker is
 * asked only when it holds more than the target, or exactly the target while we are two or more below it (as the
 * KCL steals): that keeps every worker at or below the target without handing a slot back and forth.
 */
function handoffAsks(
  input: LeaseRoundInput,
  bySlot: ReadonlyMap<number, ObservedLease>,
  live: ReadonlySet<string>,
  target: number,
  need: number,
): HandoffAsk[] {
  const askable = new Map<string, LeaseItem[]>();
  const load = new Map<string, number>();
  for (const observed of bySlot.values()) {
    const { owner, pendingOwner } = observed.lease;
    if (owner === undefined || owner === input.workerId || leaseExpired(observed, input.now, input.leaseDurationMs)) continue;
    const promised = pendingOwner !== undefined && live.has(pendingOwner);
    if (promised) continue;
    load.set(owner, (load.get(owner) ?? 0) + 1);
    askable.set(owner, [...(askable.get(owner) ?? []), observed.lease]);
  }
  const [mostLoaded] = [...load.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (mostLoaded === undefined) return [];
  const [owner, count] = mostLoaded;
  const n = count > target ? Math.min(need, count - target) : count === target && need > 1 ? 1 : 0;
  return (askable.get(owner) ?? [])
    .sort((a, b) => b.slot - a.slot)
    .slice(0, n)
    .map((observed) => ({ slot: observed.slot, observed }));
}

/**
 * Folds this round's read into what the keeper remembers: `counterChangedAt` moves to `now` when the counter (or
 * owner or epoch) differs from the previous read, and starts at `now` for an item seen for the first time.
 */
export function observeLeases(previous: ReadonlyMap<number, ObservedLease>, read: readonly LeaseItem[], now: number): Map<number, ObservedLease> {
  const next = new Map<number, ObservedLease>();
  for (const lease of read) {
    const before = previous.get(lease.slot);
    const unchanged =
      before !== undefined && before.lease.counter === lease.counter && before.lease.owner === lease.owner && before.lease.epoch === lease.epoch;
    next.set(lease.slot, { lease, counterChangedAt: unchanged ? before.counterChangedAt : now });
  }
  return next;
}

export function observeWorkers(previous: ReadonlyMap<string, ObservedWorker>, read: readonly WorkerHeartbeatItem[], now: number): Map<string, ObservedWorker> {
  const next = new Map<string, ObservedWorker>();
  for (const heartbeat of read) {
    const before = previous.get(heartbeat.workerId);
    const unchanged = before !== undefined && before.heartbeat.counter === heartbeat.counter;
    next.set(heartbeat.workerId, { heartbeat, counterChangedAt: unchanged ? before.counterChangedAt : now });
  }
  return next;
}
