import type { ClusterConfigItem, LeaseItem, WorkerHeartbeatItem } from '../../lib/cluster/control-items.ts';
import type { FencedWriteResult } from '../../lib/cluster/ports.ts';
import type { LeaseTable } from '../../lib/connectors/aws/cluster/dynamodb-lease-keeper.ts';

/**
 * The lease half of the control table in memory, with the same conditions as WorkerControlTable's DynamoDB
 * expressions, for unit tests of DynamoDbLeaseKeeper. `hold` makes the named operation hang until released, as a
 * call stuck on the network does.
 */
export class InMemoryLeaseTable implements LeaseTable {
  readonly leases = new Map<number, LeaseItem>();
  readonly heartbeats = new Map<string, WorkerHeartbeatItem>();
  leaseGeneration = 0;
  config: ClusterConfigItem | undefined;
  private readonly held = new Map<string, Promise<void>>();

  /** Calls of `operation` wait until the returned function is called. */
  hold(operation: 'renewLease' | 'readLeases'): () => void {
    let release: () => void = () => {};
    this.held.set(operation, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.held.delete(operation);
      release();
    };
  }

  private async gate(operation: string): Promise<void> {
    await this.held.get(operation);
  }

  async readConfig(): Promise<ClusterConfigItem | undefined> {
    return this.config;
  }

  async readLeases(): Promise<LeaseItem[]> {
    await this.gate('readLeases');
    return [...this.leases.values()].map((l) => ({ ...l }));
  }

  async readWorkers(): Promise<WorkerHeartbeatItem[]> {
    return [...this.heartbeats.values()].map((w) => ({ ...w }));
  }

  async takeLease(slot: number, workerId: string, observed: LeaseItem | undefined): Promise<FencedWriteResult> {
    const item = this.leases.get(slot);
    const matches =
      observed === undefined
        ? item === undefined
        : item !== undefined && item.owner === observed.owner && item.epoch === observed.epoch && item.counter === observed.counter;
    if (!matches) return 'fenced';
    return this.change(slot, { slot, owner: workerId, epoch: (item?.epoch ?? 0) + 1, counter: (item?.counter ?? 0) + 1 });
  }

  async handOverLease(slot: number, workerId: string, epoch: number, to: string): Promise<FencedWriteResult> {
    const item = this.owned(slot, workerId, epoch);
    if (item === undefined || item.pendingOwner !== to) return 'fenced';
    return this.change(slot, { slot, owner: to, epoch: epoch + 1, counter: item.counter + 1 });
  }

  async restartLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    const item = this.owned(slot, workerId, epoch);
    return item === undefined ? 'fenced' : this.change(slot, { ...item, epoch: epoch + 1, counter: item.counter + 1 });
  }

  async releaseLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    const item = this.owned(slot, workerId, epoch);
    return item === undefined ? 'fenced' : this.change(slot, { slot, epoch, counter: item.counter + 1 });
  }

  async renewLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    await this.gate('renewLease');
    const item = this.owned(slot, workerId, epoch);
    if (item === undefined) return 'fenced';
    this.leases.set(slot, { ...item, counter: item.counter + 1 });
    return 'written';
  }

  async askHandoff(slot: number, workerId: string, observed: LeaseItem): Promise<FencedWriteResult> {
    const item = this.leases.get(slot);
    if (item === undefined || item.owner !== observed.owner || item.epoch !== observed.epoch) return 'fenced';
    if (item.pendingOwner !== observed.pendingOwner && item.pendingOwner !== workerId) return 'fenced';
    this.leases.set(slot, { ...item, pendingOwner: workerId });
    return 'written';
  }

  async beat(workerId: string, at: number): Promise<void> {
    this.heartbeats.set(workerId, { workerId, at, counter: (this.heartbeats.get(workerId)?.counter ?? 0) + 1 });
  }

  async forgetWorker(workerId: string, counter?: number): Promise<void> {
    if (counter === undefined || this.heartbeats.get(workerId)?.counter === counter) this.heartbeats.delete(workerId);
  }

  private owned(slot: number, workerId: string, epoch: number): LeaseItem | undefined {
    const item = this.leases.get(slot);
    return item?.owner === workerId && item.epoch === epoch ? item : undefined;
  }

  private change(slot: number, next: LeaseItem): FencedWriteResult {
    this.leases.set(slot, next);
    this.leaseGeneration++;
    return 'written';
  }
}
