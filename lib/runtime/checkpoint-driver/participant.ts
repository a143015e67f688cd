import type { BarrierElement } from '../../core/index.ts';
import type { TaskId } from '../../checkpoint/types.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';

/**
 * How a task takes part in checkpoints, as its thread's checkpoint hub offers it. Without checkpointing the hub
 * is `NO_CHECKPOINTS`: tasks never see a barrier and end as soon as their input does.
 */
export interface CheckpointParticipant {
  readonly enabled: boolean;
  /**
   * The asynchronous phase: encodes and writes the snapshot taken in the synchronous phase (which lasted `syncMs`)
   * and acknowledges it to the coordinator. Returns at once, before encoding; a failed encode or write declines the
   * checkpoint instead of failing the task.
   */
  acknowledge(vertexName: string, checkpointId: number, snapshot: TaskSnapshot, syncMs: number): void;
  /** A source task read all its input: once every source has, the coordinator takes the final checkpoint. */
  sourceFinished(task: TaskId): void;
  /** Resolves once checkpoint `checkpointId` (or a later one) is complete and its notification was delivered. */
  completed(checkpointId: number): Promise<void>;
  isCompleted(checkpointId: number): boolean;
  /** The final checkpoint (taken after every source finished) is complete: sources may end their output. */
  finalCompleted(): boolean;
}

export const NO_CHECKPOINTS: CheckpointParticipant = {
  enabled: false,
  acknowledge() {},
  sourceFinished() {},
  completed: () => Promise.resolve(),
  isCompleted: () => true,
  finalCompleted: () => true,
};

/** Per-task mailbox of checkpoint requests from the coordinator, taken by the task between elements. */
export class CheckpointRequests {
  private readonly barriers: BarrierElement[] = [];

  constructor(private readonly wake: () => void) {}

  trigger(barrier: BarrierElement): void {
    this.barriers.push(barrier);
    this.wake();
  }

  take(): BarrierElement | undefined {
    return this.barriers.shift();
  }

  get size(): number {
    return this.barriers.length;
  }
}
