import { InternalError } from '../core/index.ts';
import type { BarrierElement } from '../core/index.ts';

/**
 * Aligned checkpoint barriers on a task with N input channels, as a state machine whose methods return the next
 * state (after Flink's BarrierHandlerState). States are immutable; a task keeps the latest one, asks it which
 * channels it may poll, and carries out the actions of each step in order.
 *
 * A channel that delivered barrier n is blocked (the task does not poll it) until barrier n has arrived on every
 * channel that has not ended; then the task snapshots, forwards the barrier and polls every channel again. A
 * channel that ends while others are aligning counts as aligned: everything it sent is before the barrier.
 */

export type AlignmentAction =
  /**
   * Every open channel delivered the barrier: take the synchronous snapshot, forward the barrier downstream,
   * then poll again (the returned state has no blocked channel).
   */
  | { readonly kind: 'snapshot'; readonly barrier: BarrierElement }
  /**
   * Checkpoint `checkpointId` will not be snapshotted by this task. `subsumed`: a newer barrier (or the
   * cancellation of a newer checkpoint) arrived first, and the task declines it to the coordinator. `cancelled`:
   * the coordinator itself aborted it. Blocked channels are released either way.
   */
  | { readonly kind: 'abort'; readonly checkpointId: number; readonly reason: 'subsumed' | 'cancelled' }
  /** A barrier of a checkpoint that is already snapshotted, aborted or superseded here; nothing changes. */
  | { readonly kind: 'ignored'; readonly checkpointId: number; readonly channel: number };

export interface AlignmentStep {
  readonly state: AlignmentState;
  readonly actions: readonly AlignmentAction[];
}

export interface AlignmentState {
  readonly kind: 'waiting' | 'collecting';
  readonly channelCount: number;
  /** Channels that have not delivered their end of input. */
  readonly openChannelCount: number;
  /** Highest checkpoint id seen here (snapshotted, aligning, aborted or cancelled); older barriers are ignored. */
  readonly latestCheckpointId: number;
  /** The checkpoint being aligned; undefined while waiting for a first barrier. */
  readonly pendingCheckpointId: number | undefined;
  /** True while the channel holds back barrier `pendingCheckpointId`: the task must not poll it. */
  isBlocked(channel: number): boolean;
  isEnded(channel: number): boolean;
  /** Blocked channels in ascending order. */
  blockedChannels(): number[];
  barrierReceived(channel: number, barrier: BarrierElement): AlignmentStep;
  endOfInput(channel: number): AlignmentStep;
  /** The coordinator aborted `checkpointId`: stop aligning it (or anything older) and never start it later. */
  abortCheckpoint(checkpointId: number): AlignmentStep;
}

/**
 * The state of a task that has not seen a barrier yet. `latestCheckpointId` is the checkpoint the task was
 * restored from, so that barriers up to it are ignored.
 */
export function waitingForFirstBarrier(channelCount: number, latestCheckpointId = 0): AlignmentState {
  if (!Number.isSafeInteger(channelCount) || channelCount < 1) {
    throw new InternalError(`barrier alignment needs at least one input channel, got ${String(channelCount)}`);
  }
  return new WaitingForFirstBarrier(channelCount, new Array<boolean>(channelCount).fill(false), channelCount, latestCheckpointId);
}

const NO_ACTIONS: readonly AlignmentAction[] = Object.freeze([]);

abstract class ChannelsState {
  constructor(
    readonly channelCount: number,
    protected readonly ended: readonly boolean[],
    readonly openChannelCount: number,
  ) {}

  isEnded(channel: number): boolean {
    return this.ended[channel] === true;
  }

  /** Anything after a channel's end of input is a bug upstream or in the task's polling. */
  protected checkOpen(channel: number, what: string): void {
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.channelCount) {
      throw new InternalError(`${what} on channel ${channel}, but the task has channels 0..${this.channelCount - 1}`);
    }
    if (this.ended[channel] === true) throw new InternalError(`${what} on channel ${channel} after its end of input`);
  }

  protected endedWith(channel: number): boolean[] {
    const ended = this.ended.slice();
    ended[channel] = true;
    return ended;
  }
}

class WaitingForFirstBarrier extends ChannelsState implements AlignmentState {
  readonly kind = 'waiting';
  readonly pendingCheckpointId = undefined;

  constructor(channelCount: number, ended: readonly boolean[], openChannelCount: number, readonly latestCheckpointId: number) {
    super(channelCount, ended, openChannelCount);
  }

  isBlocked(): boolean {
    return false;
  }

  blockedChannels(): number[] {
    return [];
  }

  barrierReceived(channel: number, barrier: BarrierElement): AlignmentStep {
    this.checkOpen(channel, `barrier ${barrier.checkpointId}`);
    if (barrier.checkpointId <= this.latestCheckpointId) {
      return { state: this, actions: [{ kind: 'ignored', checkpointId: barrier.checkpointId, channel }] };
    }
    const arrived = new Array<boolean>(this.channelCount).fill(false);
    arrived[channel] = true;
    return CollectingBarriers.next(this.channelCount, this.ended, this.openChannelCount, barrier, arrived, 1);
  }

  endOfInput(channel: number): AlignmentStep {
    this.checkOpen(channel, 'end of input');
    const state = new WaitingForFirstBarrier(this.channelCount, this.endedWith(channel), this.openChannelCount - 1, this.latestCheckpointId);
    return { state, actions: NO_ACTIONS };
  }

  abortCheckpoint(checkpointId: number): AlignmentStep {
    if (checkpointId <= this.latestCheckpointId) return { state: this, actions: NO_ACTIONS };
    return { state: new WaitingForFirstBarrier(this.channelCount, this.ended, this.openChannelCount, checkpointId), actions: NO_ACTIONS };
  }
}

class CollectingBarriers extends ChannelsState implements AlignmentState {
  readonly kind = 'collecting';

  private constructor(
    channelCount: number,
    ended: readonly boolean[],
    openChannelCount: number,
    private readonly barrier: BarrierElement,
    /** Channels that delivered `barrier`: exactly the blocked ones. None of them has ended. */
    private readonly arrived: readonly boolean[],
    private readonly arrivedCount: number,
  ) {
    super(channelCount, ended, openChannelCount);
  }

  /** Collecting, or done when every open channel has delivered the barrier. */
  static next(
    channelCount: number,
    ended: readonly boolean[],
    openChannelCount: number,
    barrier: BarrierElement,
    arrived: readonly boolean[],
    arrivedCount: number,
  ): AlignmentStep {
    if (arrivedCount < openChannelCount) {
      return { state: new CollectingBarriers(channelCount, ended, openChannelCount, barrier, arrived, arrivedCount), actions: NO_ACTIONS };
    }
    const state = new WaitingForFirstBarrier(channelCount, ended, openChannelCount, barrier.checkpointId);
    return { state, actions: [{ kind: 'snapshot', barrier }] };
  }

  get latestCheckpointId(): number {
    return this.barrier.checkpointId;
  }

  get pendingCheckpointId(): number {
    return this.barrier.checkpointId;
  }

  isBlocked(channel: number): boolean {
    return this.arrived[channel] === true;
  }

  blockedChannels(): number[] {
    const blocked: number[] = [];
    for (let c = 0; c < this.channelCount; c++) if (this.arrived[c] === true) blocked.push(c);
    return blocked;
  }

  barrierReceived(channel: number, barrier: BarrierElement): AlignmentStep {
    this.checkOpen(channel, `barrier ${barrier.checkpointId}`);
    const pending = this.barrier.checkpointId;
    if (barrier.checkpointId < pending) {
      return { state: this, actions: [{ kind: 'ignored', checkpointId: barrier.checkpointId, channel }] };
    }
    if (barrier.checkpointId > pending) {
      // As in Flink's aligned checkpoints: the newer barrier subsumes the one being aligned.
      const released = this.released(pending);
      const next = released.barrierReceived(channel, barrier);
      return { state: next.state, actions: [{ kind: 'abort', checkpointId: pending, reason: 'subsumed' }, ...next.actions] };
    }
    if (this.arrived[channel] === true) {
      throw new InternalError(`barrier ${pending} arrived twice on channel ${channel}, which is blocked and must not be polled`);
    }
    const arrived = this.arrived.slice();
    arrived[channel] = true;
    return CollectingBarriers.next(this.channelCount, this.ended, this.openChannelCount, this.barrier, arrived, this.arrivedCount + 1);
  }

  endOfInput(channel: number): AlignmentStep {
    this.checkOpen(channel, 'end of input');
    if (this.arrived[channel] === true) {
      throw new InternalError(`end of input on channel ${channel}, which is blocked by barrier ${this.barrier.checkpointId} and must not be polled`);
    }
    return CollectingBarriers.next(
      this.channelCount,
      this.endedWith(channel),
      this.openChannelCount - 1,
      this.barrier,
      this.arrived,
      this.arrivedCount,
    );
  }

  abortCheckpoint(checkpointId: number): AlignmentStep {
    const pending = this.barrier.checkpointId;
    if (checkpointId < pending) return { state: this, actions: NO_ACTIONS };
    return {
      state: this.released(checkpointId),
      actions: [{ kind: 'abort', checkpointId: pending, reason: checkpointId === pending ? 'cancelled' : 'subsumed' }],
    };
  }

  private released(latestCheckpointId: number): WaitingForFirstBarrier {
    return new WaitingForFirstBarrier(this.channelCount, this.ended, this.openChannelCount, latestCheckpointId);
  }
}
