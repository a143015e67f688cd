import type { FencingToken } from '../../core/index.ts';
import { crashPoint } from '../../core/fault-injection.ts';
import type { AckItem, SlotCommittablesRef } from '../../cluster/control-items.ts';
import type { AckWriter } from '../../cluster/ports.ts';
import { encodeSlotCommittables, slotCommittablesName } from '../../cluster/slot-committables.ts';
import { checkpointDirName } from '../../checkpoint/naming.ts';
import type { TaskId, TaskStateHandle } from '../../checkpoint/types.ts';
import { sha256Hex } from '../../storage/fs/durable-fs.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import type { CoordinatorLink } from '../checkpoint-driver/checkpoint-driver.ts';
import type { PendingCommittable } from '../../operators/basic/sink-operator.ts';

/** What the slot's checkpoint side reports to its runner. */
export interface SlotCheckpointEvents {
  /** The ack (or decline) item was put. */
  acked(item: AckItem): void;
  /** The lease no longer names this owner and epoch: nothing was written; the slot must stop. */
  fenced(what: string, checkpointId: number): void;
  /** Writing the committables object or the ack failed (it is retried while the checkpoint can still complete). */
  warn(line: string): void;
}

export interface SlotCheckpointsInit {
  readonly slot: number;
  readonly epoch: number;
  readonly owner: string;
  /** The slot's tasks: subtask `slot` of every vertex. One ack is put once all of them acked. */
  readonly tasks: readonly TaskId[];
  /** Node ids of the slot's two-phase-commit sinks (committables go to the slot object, one entry each). */
  readonly sinkNodes: readonly number[];
  readonly store: ObjectStore;
  readonly acks: AckWriter;
  readonly now: () => number;
  readonly events: SlotCheckpointEvents;
  /** First pause before a failed committables or ack put is retried; doubles per attempt. @default 200 */
  readonly retryDelayMs?: number;
  /** Longest pause between retries. @default 5000 */
  readonly maxRetryDelayMs?: number;
}

interface PendingCheckpoint {
  readonly handles: TaskStateHandle[];
  readonly committables: Map<number, unknown[]>;
  done: boolean;
}

/**
 * The coordinator link of one slot (its CheckpointHub acks through it): collects the acks of the slot's tasks for a
 * checkpoint, then writes the slot's committables object beside the task files (`chk-<n>/committables-<s>-e<epoch>.json`)
 * and puts ONE ack item through the AckWriter, conditioned on the lease's owner and epoch. A task's decline puts a
 * decline item instead. After `close` nothing more is written.
 */
export class SlotCheckpoints implements CoordinatorLink {
  private readonly pending = new Map<number, PendingCheckpoint>();
  private closed = false;
  /** Puts run one after another, in checkpoint order. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly init: SlotCheckpointsInit) {}

  /**
   * Takes the committables a sink task hands over at `checkpointId` from its snapshot (before it is encoded): those
   * prepared at this barrier and every earlier one not yet known completed (aborted checkpoints, plain savepoints),
   * which the coordinator commits with this checkpoint.
   */
  collectCommittables(checkpointId: number, snapshot: TaskSnapshot): void {
    const sinks = new Set(this.init.sinkNodes);
    for (const op of snapshot.operators) {
      if (!sinks.has(op.nodeId)) continue;
      const items = (op.operatorState ?? []) as PendingCommittable[];
      this.checkpoint(checkpointId).committables.set(
        op.nodeId,
        items.filter((i) => i.checkpointId <= checkpointId).map((i) => i.committable),
      );
    }
  }

  ack(checkpointId: number, handle: TaskStateHandle, _token?: FencingToken): void {
    if (this.closed) return;
    const p = this.checkpoint(checkpointId);
    if (p.done) return;
    p.handles.push(handle);
    if (p.handles.length < this.init.tasks.length) return;
    p.done = true;
    this.enqueue(checkpointId, () => this.putAck(checkpointId, p));
  }

  decline(checkpointId: number, task: TaskId, reason: string, _token?: FencingToken): void {
    if (this.closed) return;
    const p = this.checkpoint(checkpointId);
    if (p.done) return;
    p.done = true;
    const { slot, owner, epoch } = this.init;
    const item: AckItem = {
      kind: 'decline',
      checkpointId,
      slot,
      owner,
      epoch,
      reason: `task ${task.vertex}/${task.subtask}: ${reason}`,
      at: this.init.now(),
    };
    this.enqueue(checkpointId, () => this.put(item));
  }

  /** Cluster sources are unbounded: there is no final checkpoint to count sources for. */
  sourceFinished(): void {}

  /** Checkpoint `checkpointId` is complete: forget it and every earlier one. */
  completed(checkpointId: number): void {
    for (const id of this.pending.keys()) if (id <= checkpointId) this.pending.delete(id);
  }

  /** Writes nothing more (the slot stops, or its lease is lost). Resolves once a put in progress ended. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
  }

  private checkpoint(checkpointId: number): PendingCheckpoint {
    let p = this.pending.get(checkpointId);
    if (p === undefined) {
      p = { handles: [], committables: new Map(), done: false };
      this.pending.set(checkpointId, p);
    }
    return p;
  }

  /**
   * Runs a put, retrying a failure with backoff (a throttled or conflicting transaction, an S3 5xx) as long as it can
   * still matter: until the slot closes, the checkpoint completes, or a later barrier reached the slot (the
   * coordinator gave up on this one). Both puts are idempotent. Without the retry one transient error stalls the
   * checkpoint until its timeout. A `fenced` result is no error: it stops the slot at once.
   */
  private enqueue(checkpointId: number, work: () => Promise<void>): void {
    this.queue = this.queue.then(async () => {
      let delay = this.init.retryDelayMs ?? 200;
      for (let attempt = 1; !this.closed; attempt++) {
        try {
          await work();
          return;
        } catch (err) {
          const giveUp = this.superseded(checkpointId);
          this.init.events.warn(
            `slot ${this.init.slot}: checkpoint ${checkpointId} not acknowledged (attempt ${attempt}${giveUp ? ', superseded: giving up' : `, retrying in ${delay} ms`}): ${err instanceof Error ? err.message : String(err)}`,
          );
          if (giveUp) return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        delay = Math.min(this.init.maxRetryDelayMs ?? 5000, delay * 2);
        if (this.superseded(checkpointId)) return;
      }
    });
  }

  /** Completed (forgotten by `completed`), or a later checkpoint's barrier reached the slot. */
  private superseded(checkpointId: number): boolean {
    if (!this.pending.has(checkpointId)) return true;
    for (const id of this.pending.keys()) if (id > checkpointId) return true;
    return false;
  }

  private async putAck(checkpointId: number, p: PendingCheckpoint): Promise<void> {
    const { slot, owner, epoch } = this.init;
    const committables = this.init.sinkNodes.length === 0 ? undefined : await this.writeCommittables(checkpointId, p);
    if (this.closed) return;
    const item: AckItem = {
      kind: 'ack',
      checkpointId,
      slot,
      owner,
      epoch,
      handles: [...p.handles].sort((a, b) => a.task.vertex - b.task.vertex),
      ...(committables === undefined ? {} : { committables }),
      at: this.init.now(),
    };
    await this.put(item);
  }

  private async writeCommittables(checkpointId: number, p: PendingCheckpoint): Promise<SlotCommittablesRef> {
    const { slot, epoch, store } = this.init;
    const data = encodeSlotCommittables({
      version: 1,
      checkpointId,
      slot,
      epoch,
      sinks: this.init.sinkNodes.map((nodeId) => ({ nodeId, committables: p.committables.get(nodeId) ?? [] })),
    });
    const path = `${checkpointDirName(checkpointId)}/${slotCommittablesName(slot, epoch)}`;
    const sha256 = await sha256Hex(data);
    await store.put(path, data, sha256);
    return { path, bytes: data.byteLength, sha256 };
  }

  private async put(item: AckItem): Promise<void> {
    const result = await this.init.acks.putAck(item);
    if (result === 'fenced') {
      this.closed = true;
      this.init.events.fenced(item.kind, item.checkpointId);
      return;
    }
    // Crash tests only (SLUICE_CRASH_AT, see fault-injection.ts): the ack counts, the worker is gone.
    if (item.kind === 'ack') crashPoint('after-ack');
    this.init.events.acked(item);
  }
}
