import type { AckItem, ClusterConfigItem, ControlItem, ControlTrigger, LeaseItem } from '../../../lib/cluster/control-items.ts';
import type { AckWriter, ControlReader, FencedWriteResult, HeldSlot, LeaseEvent, SlotLeaseKeeper } from '../../../lib/cluster/ports.ts';

/**
 * The control table of one job as an in-memory model with the conditions the DynamoDB adapters apply: an ack is
 * put only while the lease names its owner and epoch (else `fenced`, nothing written); every take, handoff and
 * local restart bumps the slot's epoch and the job's lease generation together. Tests play the coordinator through
 * `trigger`, `complete` and `halt`.
 */
export class InMemoryControlTable implements ControlReader, AckWriter {
  config: ClusterConfigItem | undefined;
  control: ControlItem = { leaseGeneration: 0, sinkCommittedThrough: 0 };
  readonly leases = new Map<number, LeaseItem>();
  /** Ack and decline items by `ack#<checkpoint>#<slot>`. */
  readonly acks = new Map<string, AckItem>();
  /** Every refused put, in order. */
  readonly refused: AckItem[] = [];
  /** Consistent reads of `control` so far. */
  controlReads = 0;

  readConfig(): Promise<ClusterConfigItem | undefined> {
    return Promise.resolve(this.config);
  }

  readControl(): Promise<ControlItem | undefined> {
    this.controlReads++;
    return Promise.resolve(this.control);
  }

  putAck(ack: AckItem): Promise<FencedWriteResult> {
    const lease = this.leases.get(ack.slot);
    if (lease?.owner !== ack.owner || lease.epoch !== ack.epoch) {
      this.refused.push(ack);
      return Promise.resolve('fenced');
    }
    this.acks.set(`${ack.checkpointId}#${ack.slot}`, ack);
    return Promise.resolve('written');
  }

  ack(checkpointId: number, slot: number): AckItem | undefined {
    return this.acks.get(`${checkpointId}#${slot}`);
  }

  /** One transaction: owner, epoch + 1, leaseGeneration + 1. */
  take(slot: number, owner: string): HeldSlot {
    const before = this.leases.get(slot);
    const epoch = (before?.epoch ?? 0) + 1;
    this.leases.set(slot, { slot, owner, epoch, counter: (before?.counter ?? 0) + 1 });
    this.control = { ...this.control, leaseGeneration: this.control.leaseGeneration + 1 };
    return { slot, epoch };
  }

  release(slot: number): void {
    const before = this.leases.get(slot);
    if (before !== undefined) this.leases.set(slot, { slot, epoch: before.epoch, counter: before.counter + 1 });
  }

  trigger(checkpointId: number, options: Partial<ControlTrigger> = {}): void {
    this.control = {
      ...this.control,
      trigger: { checkpointId, savepoint: false, timestamp: 1_000 * checkpointId, leaseGeneration: this.control.leaseGeneration, ...options },
    };
  }

  /** As the coordinator: `slotEpochs` defaults to the epochs of the checkpoint's ack items (-1 for a slot without). */
  complete(checkpointId: number, metadataPath: string, slotEpochs?: readonly number[]): void {
    const P = this.config?.parallelism ?? 0;
    const epochs = slotEpochs ?? Array.from({ length: P }, (_, s) => this.ack(checkpointId, s)?.epoch ?? -1);
    this.control = { ...this.control, completed: { checkpointId, metadataPath, ...(epochs.length === 0 ? {} : { slotEpochs: epochs }) } };
  }

  halt(checkpointId: number, savepointPath: string): void {
    this.control = { ...this.control, halted: { checkpointId, savepointPath } };
  }
}

/**
 * A SlotLeaseKeeper over the in-memory table whose decisions the test makes: `grant` takes a slot and reports
 * `acquired`, `lose` gives it to someone else and reports `lost`, `askHandoff` reports `handoffRequested`.
 */
export class InMemoryLeaseKeeper implements SlotLeaseKeeper {
  private listener: ((event: LeaseEvent) => void) | undefined;
  private readonly slots = new Map<number, HeldSlot>();
  readonly handedOver: HeldSlot[] = [];
  readonly released: HeldSlot[] = [];
  closed = false;

  constructor(
    readonly workerId: string,
    private readonly table: InMemoryControlTable,
  ) {}

  start(onEvent: (event: LeaseEvent) => void): void {
    this.listener = onEvent;
  }

  /** The worker called `start`: events reach it from now on. */
  get listening(): boolean {
    return this.listener !== undefined;
  }

  held(): readonly HeldSlot[] {
    return [...this.slots.values()];
  }

  grant(slot: number): HeldSlot {
    const held = this.table.take(slot, this.workerId);
    this.slots.set(slot, held);
    this.listener?.({ kind: 'acquired', ...held });
    return held;
  }

  lose(slot: number, to: string): void {
    const held = this.slots.get(slot);
    if (held === undefined) return;
    this.slots.delete(slot);
    this.table.take(slot, to);
    this.listener?.({ kind: 'lost', ...held, reason: `taken by ${to}` });
  }

  askHandoff(slot: number, to: string): void {
    const held = this.slots.get(slot);
    if (held !== undefined) this.listener?.({ kind: 'handoffRequested', ...held, to });
  }

  restartLocally(slot: HeldSlot): Promise<HeldSlot> {
    const lease = this.table.leases.get(slot.slot);
    if (lease?.owner !== this.workerId || lease.epoch !== slot.epoch) return Promise.reject(new Error(`slot ${slot.slot} is not ours at epoch ${slot.epoch}`));
    const next = this.table.take(slot.slot, this.workerId);
    this.slots.set(slot.slot, next);
    return Promise.resolve(next);
  }

  handOver(slot: HeldSlot): Promise<void> {
    this.slots.delete(slot.slot);
    this.handedOver.push(slot);
    this.table.release(slot.slot);
    return Promise.resolve();
  }

  release(slot: HeldSlot): Promise<void> {
    this.slots.delete(slot.slot);
    this.released.push(slot);
    this.table.release(slot.slot);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
