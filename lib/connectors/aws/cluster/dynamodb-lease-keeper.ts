import {
  decideLeaseRound,
  heartbeatForgettable,
  observeLeases,
  observeWorkers,
  renewalDeadline,
  renewalOverdue,
  type AskedHandoff,
  type HeldLease,
  type ObservedWorker,
} from '../../../cluster/lease-decisions.ts';
import type { HeldSlot, LeaseEvent, ObservedLease, SlotLeaseKeeper } from '../../../cluster/ports.ts';
import { compileLeaseKeeperOptions, type CompiledLeaseKeeperOptions, type LeaseKeeperOptions } from './lease-keeper-options.ts';
import { LeaseLostError } from './worker-control-errors.ts';
import type { WorkerControlTable } from './worker-control-table.ts';

/** What the keeper needs of the control table (WorkerControlTable; tests may pass a fake). */
export type LeaseTable = Pick<
  WorkerControlTable,
  'readConfig' | 'readLeases' | 'readWorkers' | 'takeLease' | 'handOverLease' | 'restartLease' | 'releaseLease' | 'renewLease' | 'askHandoff' | 'beat' | 'forgetWorker'
>;

/** Counts since start, for logs and cost figures (each is one DynamoDB request, a transaction counts once). */
export interface LeaseKeeperStats {
  rounds: number;
  renewals: number;
  renewalsRefused: number;
  takes: number;
  asks: number;
  handovers: number;
  releases: number;
  restarts: number;
  lost: number;
  reads: number;
  errors: number;
}

/**
 * Keeps this worker's slot leases in the control table, as the Kinesis Client Library keeps shard leases: every
 * third of the lease it renews its leases and its heartbeat, reads every lease and heartbeat (consistent Query),
 * and acts on `decideLeaseRound` (lib/cluster/lease-decisions.ts): takes, asks for handoffs, adopts slots handed
 * over. The runtime hears `acquired`, `lost` and `handoffRequested` and calls back `handOver`, `release`,
 * `restartLocally`. Rounds and those calls run one at a time, so a round never acts on a read older than a change
 * this worker made itself.
 *
 * A slot is lost at once when a renewal is refused, when the table shows another owner or epoch, or when no
 * renewal succeeded for 2/3 of the lease: a timer watches that deadline even while a round hangs on the network.
 */
export class DynamoDbLeaseKeeper implements SlotLeaseKeeper {
  readonly workerId: string;
  readonly stats: LeaseKeeperStats = { rounds: 0, renewals: 0, renewalsRefused: 0, takes: 0, asks: 0, handovers: 0, releases: 0, restarts: 0, lost: 0, reads: 0, errors: 0 };
  private readonly options: CompiledLeaseKeeperOptions;
  private readonly heldSlots = new Map<number, HeldLease>();
  private leases = new Map<number, ObservedLease>();
  private workers = new Map<string, ObservedWorker>();
  private readonly asked = new Map<number, AskedHandoff>();
  /** Handoff requests announced to the runtime, by slot: the worker to hand over to. */
  private readonly requested = new Map<number, { epoch: number; to: string }>();
  private slotCount: number | undefined;
  private onEvent: (event: LeaseEvent) => void = () => {};
  private running = false;
  private roundTimer: unknown;
  private deadlineTimer: unknown;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly table: LeaseTable,
    options: LeaseKeeperOptions = {},
  ) {
    this.options = compileLeaseKeeperOptions(options);
    this.workerId = this.options.workerId;
    this.slotCount = this.options.slotCount;
  }

  start(onEvent: (event: LeaseEvent) => void): void {
    if (this.running) return;
    // A throwing listener must not cut a round short (a half-done round could skip the renewals of other slots).
    this.onEvent = (event) => {
      try {
        onEvent(event);
      } catch (error) {
        this.options.onError(error);
      }
    };
    this.running = true;
    this.scheduleRound(0);
  }

  held(): readonly HeldSlot[] {
    return [...this.heldSlots.values()].map(({ slot, epoch }) => ({ slot, epoch })).sort((a, b) => a.slot - b.slot);
  }

  /** A round now (then every third of the lease again); resolves when it finished. */
  runRound(): Promise<void> {
    return this.exclusive(() => this.round());
  }

  /** Resolves once the round or lease call in progress (and any queued behind it) has finished. */
  async settled(): Promise<void> {
    let seen: Promise<unknown>;
    do {
      seen = this.chain;
      await seen;
    } while (seen !== this.chain);
  }

  async restartLocally(slot: HeldSlot): Promise<HeldSlot> {
    return this.exclusive(async () => {
      const current = this.current(slot, 'restart locally');
      const sentAt = this.options.clock.now();
      if ((await this.table.restartLease(slot.slot, this.workerId, current.epoch)) === 'fenced') {
        this.lose(current, 'the lease moved on before a local restart');
        throw new LeaseLostError(slot.slot, slot.epoch, 'restart locally');
      }
      this.stats.restarts++;
      const next: HeldLease = { slot: slot.slot, epoch: current.epoch + 1, renewedAt: sentAt };
      this.heldSlots.set(slot.slot, next);
      return { slot: next.slot, epoch: next.epoch };
    });
  }

  async handOver(slot: HeldSlot): Promise<void> {
    await this.exclusive(async () => {
      const current = this.current(slot, 'hand over');
      const to = this.requested.get(slot.slot)?.to ?? this.leases.get(slot.slot)?.lease.pendingOwner;
      this.heldSlots.delete(slot.slot);
      this.requested.delete(slot.slot);
      // The slot has stopped: whatever happens below, this worker no longer runs it.
      const result = to === undefined ? 'fenced' : await this.table.handOverLease(slot.slot, this.workerId, current.epoch, to);
      if (result === 'written') {
        this.stats.handovers++;
        return;
      }
      // The request changed or vanished meanwhile: release, so that whoever wants the slot takes it at once.
      if ((await this.table.releaseLease(slot.slot, this.workerId, current.epoch)) === 'written') this.stats.releases++;
    });
  }

  async release(slot: HeldSlot): Promise<void> {
    await this.exclusive(async () => {
      const current = this.heldSlots.get(slot.slot);
      if (current === undefined || current.epoch !== slot.epoch) return; // not ours any more: nothing to release
      this.heldSlots.delete(slot.slot);
      this.requested.delete(slot.slot);
      if ((await this.table.releaseLease(slot.slot, this.workerId, current.epoch)) === 'written') this.stats.releases++;
    });
  }

  async close(): Promise<void> {
    this.running = false;
    this.options.timers.clearTimeout(this.roundTimer);
    this.options.timers.clearTimeout(this.deadlineTimer);
    await this.chain.catch(() => {});
    await this.table.forgetWorker(this.workerId).catch((error: unknown) => this.options.onError(error));
  }

  private current(slot: HeldSlot, operation: string): HeldLease {
    const current = this.heldSlots.get(slot.slot);
    if (current === undefined || current.epoch !== slot.epoch) throw new LeaseLostError(slot.slot, slot.epoch, operation);
    return current;
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }

  private scheduleRound(delayMs: number): void {
    this.options.timers.clearTimeout(this.roundTimer);
    this.roundTimer = this.options.timers.setTimeout(() => {
      void this.exclusive(() => this.round()).finally(() => {
        if (this.running) this.scheduleRound(this.options.roundIntervalMs);
      });
    }, delayMs);
  }

  /** Arms the timer that stops slots whose renewals have all failed for 2/3 of the lease. */
  private armDeadline(): void {
    this.options.timers.clearTimeout(this.deadlineTimer);
    if (!this.running || this.heldSlots.size === 0) return;
    const earliest = Math.min(...[...this.heldSlots.values()].map((h) => renewalDeadline(h, this.options.leaseDurationMs)));
    this.deadlineTimer = this.options.timers.setTimeout(() => this.loseOverdue(), Math.max(0, earliest - this.options.clock.now()));
  }

  private loseOverdue(): void {
    const now = this.options.clock.now();
    for (const h of [...this.heldSlots.values()]) {
      if (renewalOverdue(h, now, this.options.leaseDurationMs)) this.lose(h, `no renewal succeeded for ${Math.round(now - h.renewedAt)} ms (2/3 of the lease)`);
    }
    this.armDeadline();
  }

  private lose(h: HeldLease, reason: string): void {
    if (this.heldSlots.get(h.slot)?.epoch !== h.epoch) return;
    this.heldSlots.delete(h.slot);
    this.requested.delete(h.slot);
    this.stats.lost++;
    this.onEvent({ kind: 'lost', slot: h.slot, epoch: h.epoch, reason });
  }

  private acquire(slot: number, epoch: number, renewedAt: number, previousOwner: string | undefined): void {
    this.heldSlots.set(slot, { slot, epoch, renewedAt });
    this.asked.delete(slot);
    this.onEvent({ kind: 'acquired', slot, epoch, ...(previousOwner === undefined ? {} : { previousOwner }) });
  }

  private async round(): Promise<void> {
    if (!this.running) return;
    this.stats.rounds++;
    try {
      this.loseOverdue();
      await this.renewAll();
      const { clock, leaseDurationMs } = this.options;
      await this.table.beat(this.workerId, clock.now());
      if (this.slotCount === undefined) {
        this.stats.reads++;
        this.slotCount = (await this.table.readConfig())?.parallelism;
        if (this.slotCount === undefined) return; // not initialised yet (`sluice aws init`): try next round
      }
      this.stats.reads += 2;
      const [leases, workers] = await Promise.all([this.table.readLeases(), this.table.readWorkers()]);
      const now = clock.now();
      this.leases = observeLeases(this.leases, leases, now);
      // An ask another worker overwrote (or that was answered by a release) will not be handed over to us.
      for (const slot of [...this.asked.keys()]) {
        const lease = this.leases.get(slot)?.lease;
        if (lease?.owner !== this.workerId && lease?.pendingOwner !== this.workerId) this.asked.delete(slot);
      }
      this.workers = observeWorkers(
        this.workers,
        workers.filter((w) => w.workerId !== this.workerId),
        now,
      );
      const decision = decideLeaseRound({
        workerId: this.workerId,
        slotCount: this.slotCount,
        leases: [...this.leases.values()],
        workers: [...this.workers.values()],
        held: [...this.heldSlots.values()],
        asked: this.asked,
        leaseDurationMs,
        maxSlots: this.options.maxSlots,
        now,
      });
      for (const loss of decision.lose) {
        const h = this.heldSlots.get(loss.slot);
        if (h !== undefined) this.lose(h, loss.reason);
      }
      for (const adopt of decision.adopt) {
        // Renew first: the handoff may have moved the counter long ago.
        const sentAt = clock.now();
        if ((await this.table.renewLease(adopt.slot, this.workerId, adopt.epoch)) === 'written') this.acquire(adopt.slot, adopt.epoch, sentAt, adopt.previousOwner);
        else this.asked.delete(adopt.slot);
      }
      for (const take of decision.take) {
        const sentAt = clock.now();
        if ((await this.table.takeLease(take.slot, this.workerId, take.observed)) !== 'written') continue;
        this.stats.takes++;
        const previous = take.observed?.owner;
        this.acquire(take.slot, (take.observed?.epoch ?? 0) + 1, sentAt, previous === this.workerId ? undefined : previous);
      }
      for (const ask of decision.ask) {
        if ((await this.table.askHandoff(ask.slot, this.workerId, ask.observed)) !== 'written') continue;
        this.stats.asks++;
        this.asked.set(ask.slot, { from: ask.observed.owner ?? '', epoch: ask.observed.epoch });
      }
      for (const request of decision.handoffRequested) {
        const before = this.requested.get(request.slot);
        if (before !== undefined && before.epoch === request.epoch && before.to === request.to) continue;
        this.requested.set(request.slot, { epoch: request.epoch, to: request.to });
        this.onEvent({ kind: 'handoffRequested', slot: request.slot, epoch: request.epoch, to: request.to });
      }
      for (const w of this.workers.values()) {
        if (heartbeatForgettable(w, now, leaseDurationMs)) await this.table.forgetWorker(w.heartbeat.workerId, w.heartbeat.counter);
      }
    } catch (error) {
      this.stats.errors++;
      this.options.onError(error);
    } finally {
      this.armDeadline();
    }
  }

  private async renewAll(): Promise<void> {
    await Promise.all(
      [...this.heldSlots.values()].map(async (h) => {
        const sentAt = this.options.clock.now();
        let result;
        try {
          result = await this.table.renewLease(h.slot, this.workerId, h.epoch);
        } catch (error) {
          // Not refused, just not through: the deadline timer stops the slot if this goes on for 2/3 of the lease.
          this.stats.errors++;
          this.options.onError(error);
          return;
        }
        if (result === 'fenced') {
          this.stats.renewalsRefused++;
          this.lose(h, 'renewal refused: the lease names another owner or epoch');
          return;
        }
        this.stats.renewals++;
        const now = this.heldSlots.get(h.slot);
        if (now !== undefined && now.epoch === h.epoch && now.renewedAt < sentAt) this.heldSlots.set(h.slot, { ...now, renewedAt: sentAt });
      }),
    );
  }
}
