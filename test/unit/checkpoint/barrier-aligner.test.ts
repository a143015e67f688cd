import { describe, expect, it } from 'vitest';
import { InternalError } from '../../../lib/core/index.ts';
import type { BarrierElement } from '../../../lib/core/index.ts';
import { waitingForFirstBarrier } from '../../../lib/checkpoint/barrier-aligner.ts';
import type { AlignmentState, AlignmentStep } from '../../../lib/checkpoint/barrier-aligner.ts';

const barrier = (checkpointId: number, savepoint = false): BarrierElement => ({
  kind: 'barrier',
  checkpointId,
  timestamp: 1000 + checkpointId,
  savepoint,
});

/** Applies steps in order and returns the last state with every action seen. */
function run(state: AlignmentState, ...events: Array<(s: AlignmentState) => AlignmentStep>): { state: AlignmentState; actions: unknown[] } {
  const actions: unknown[] = [];
  for (const event of events) {
    const step = event(state);
    state = step.state;
    actions.push(...step.actions);
  }
  return { state, actions };
}
const b = (channel: number, id: number) => (s: AlignmentState) => s.barrierReceived(channel, barrier(id));
const end = (channel: number) => (s: AlignmentState) => s.endOfInput(channel);
const cancel = (id: number) => (s: AlignmentState) => s.abortCheckpoint(id);

describe('barrier alignment', () => {
  it('snapshots at once on a task with one input', () => {
    const step = waitingForFirstBarrier(1).barrierReceived(0, barrier(1, true));
    expect(step.actions).toEqual([{ kind: 'snapshot', barrier: barrier(1, true) }]);
    expect(step.state.kind).toBe('waiting');
    expect(step.state.latestCheckpointId).toBe(1);
    expect(step.state.isBlocked(0)).toBe(false);
  });

  it('blocks each channel that delivered the barrier until all have, then snapshots and unblocks all', () => {
    const s0 = waitingForFirstBarrier(3);
    const s1 = s0.barrierReceived(0, barrier(1));
    expect(s1.actions).toEqual([]);
    expect(s1.state.kind).toBe('collecting');
    expect(s1.state.pendingCheckpointId).toBe(1);
    expect(s1.state.blockedChannels()).toEqual([0]);
    expect([0, 1, 2].map((c) => s1.state.isBlocked(c))).toEqual([true, false, false]);
    const s2 = s1.state.barrierReceived(2, barrier(1));
    expect(s2.actions).toEqual([]);
    expect(s2.state.blockedChannels()).toEqual([0, 2]);
    const s3 = s2.state.barrierReceived(1, barrier(1));
    expect(s3.actions).toEqual([{ kind: 'snapshot', barrier: barrier(1) }]);
    expect(s3.state.blockedChannels()).toEqual([]);
    expect(s3.state.pendingCheckpointId).toBeUndefined();
    // States are values: earlier ones are unchanged.
    expect(s0.blockedChannels()).toEqual([]);
    expect(s1.state.blockedChannels()).toEqual([0]);
    // The next checkpoint aligns the same way.
    const next = run(s3.state, b(1, 2), b(0, 2));
    expect(next.state.blockedChannels()).toEqual([0, 1]);
    expect(run(next.state, b(2, 2)).actions).toEqual([{ kind: 'snapshot', barrier: barrier(2) }]);
  });

  it('counts a channel that ends while aligning as aligned', () => {
    const aligning = run(waitingForFirstBarrier(3), b(0, 1), b(1, 1));
    expect(aligning.state.blockedChannels()).toEqual([0, 1]);
    const step = aligning.state.endOfInput(2);
    expect(step.actions).toEqual([{ kind: 'snapshot', barrier: barrier(1) }]);
    expect(step.state.blockedChannels()).toEqual([]);
    expect(step.state.isEnded(2)).toBe(true);
    expect(step.state.openChannelCount).toBe(2);
  });

  it('does not wait for channels that ended before the barrier', () => {
    const ended = run(waitingForFirstBarrier(3), end(0), end(2));
    expect(ended.state.openChannelCount).toBe(1);
    expect(run(ended.state, b(1, 1)).actions).toEqual([{ kind: 'snapshot', barrier: barrier(1) }]);
    const oneEnded = run(waitingForFirstBarrier(3), end(1), b(0, 1));
    expect(oneEnded.state.blockedChannels()).toEqual([0]);
    expect(run(oneEnded.state, b(2, 1)).actions).toEqual([{ kind: 'snapshot', barrier: barrier(1) }]);
  });

  it('treats a barrier or an end after a channel ended, or on a blocked channel, as a bug', () => {
    const ended = run(waitingForFirstBarrier(2), end(0)).state;
    expect(() => ended.barrierReceived(0, barrier(1))).toThrow(InternalError);
    expect(() => ended.endOfInput(0)).toThrow(InternalError);
    const aligning = run(waitingForFirstBarrier(3), end(2), b(0, 1)).state;
    expect(() => aligning.barrierReceived(2, barrier(1))).toThrow(/after its end of input/);
    expect(() => aligning.barrierReceived(0, barrier(1))).toThrow(/arrived twice on channel 0/);
    expect(() => aligning.endOfInput(0)).toThrow(/blocked by barrier 1/);
    expect(() => aligning.barrierReceived(3, barrier(1))).toThrow(/channels 0..2/);
    expect(() => waitingForFirstBarrier(0)).toThrow(InternalError);
  });

  it('lets a newer barrier subsume the checkpoint being aligned, and ignores the older one arriving later', () => {
    const aligning = run(waitingForFirstBarrier(3), b(0, 1), b(1, 1)).state;
    const step = aligning.barrierReceived(2, barrier(2));
    expect(step.actions).toEqual([{ kind: 'abort', checkpointId: 1, reason: 'subsumed' }]);
    expect(step.state.pendingCheckpointId).toBe(2);
    expect(step.state.blockedChannels()).toEqual([2]);
    // Channels 0 and 1 were released; each still delivers barrier 2 after resuming.
    const done = run(step.state, b(0, 2), b(1, 2));
    expect(done.actions).toEqual([{ kind: 'snapshot', barrier: barrier(2) }]);

    // Barrier 1 still travelling on channel 1 when 2 took over is ignored there.
    const late = run(waitingForFirstBarrier(2), b(0, 1), b(0, 2));
    expect(late.state.blockedChannels()).toEqual([0]);
    const ignored = late.state.barrierReceived(1, barrier(1));
    expect(ignored.actions).toEqual([{ kind: 'ignored', checkpointId: 1, channel: 1 }]);
    expect(ignored.state).toBe(late.state);
    expect(run(ignored.state, b(1, 2)).actions).toEqual([{ kind: 'snapshot', barrier: barrier(2) }]);
  });

  it('snapshots when the last channel it waits for ends, even if every other channel ended too', () => {
    const soleBlocked = run(waitingForFirstBarrier(3), end(2), b(0, 7), end(1));
    expect(soleBlocked.actions).toEqual([{ kind: 'snapshot', barrier: barrier(7) }]);
    expect(soleBlocked.state.openChannelCount).toBe(1);
    expect(soleBlocked.state.blockedChannels()).toEqual([]);
    // Every channel ended without a barrier: nothing to snapshot, nothing blocked.
    const allEnded = run(waitingForFirstBarrier(2), end(0), end(1));
    expect(allEnded.actions).toEqual([]);
    expect(allEnded.state.openChannelCount).toBe(0);
  });

  it('ignores barriers of checkpoints already snapshotted or older than the restored one', () => {
    const restored = waitingForFirstBarrier(2, 10);
    expect(restored.barrierReceived(0, barrier(10)).actions).toEqual([{ kind: 'ignored', checkpointId: 10, channel: 0 }]);
    expect(restored.barrierReceived(0, barrier(11)).state.pendingCheckpointId).toBe(11);
    const done = run(waitingForFirstBarrier(2), b(0, 1), b(1, 1)).state;
    expect(done.barrierReceived(0, barrier(1)).actions).toEqual([{ kind: 'ignored', checkpointId: 1, channel: 0 }]);
  });

  it('releases blocked channels when the coordinator aborts the checkpoint being aligned', () => {
    const aligning = run(waitingForFirstBarrier(3), b(0, 4), b(2, 4)).state;
    const step = aligning.abortCheckpoint(4);
    expect(step.actions).toEqual([{ kind: 'abort', checkpointId: 4, reason: 'cancelled' }]);
    expect(step.state.blockedChannels()).toEqual([]);
    expect(step.state.kind).toBe('waiting');
    // The remaining barrier 4 must not start the aborted checkpoint again.
    const late = step.state.barrierReceived(1, barrier(4));
    expect(late.actions).toEqual([{ kind: 'ignored', checkpointId: 4, channel: 1 }]);
    // The next one aligns normally.
    expect(run(late.state, b(0, 5), b(1, 5), b(2, 5)).actions).toEqual([{ kind: 'snapshot', barrier: barrier(5) }]);
  });

  it('handles aborts of other checkpoints the way Flink handles cancellation markers', () => {
    const aligning = run(waitingForFirstBarrier(2), b(0, 4)).state;
    // An older one: nothing changes.
    const older = aligning.abortCheckpoint(3);
    expect(older.actions).toEqual([]);
    expect(older.state).toBe(aligning);
    // A newer one: the pending checkpoint is subsumed, and the cancelled one never starts here.
    const newer = run(aligning, cancel(6));
    expect(newer.actions).toEqual([{ kind: 'abort', checkpointId: 4, reason: 'subsumed' }]);
    expect(newer.state.latestCheckpointId).toBe(6);
    expect(run(newer.state, b(1, 5), b(0, 6)).actions).toEqual([
      { kind: 'ignored', checkpointId: 5, channel: 1 },
      { kind: 'ignored', checkpointId: 6, channel: 0 },
    ]);
    // Cancelled before any of its barriers arrived: ignored when they come.
    const waiting = waitingForFirstBarrier(2).abortCheckpoint(1);
    expect(waiting.actions).toEqual([]);
    expect(waiting.state.barrierReceived(0, barrier(1)).actions).toEqual([{ kind: 'ignored', checkpointId: 1, channel: 0 }]);
    expect(waiting.state.abortCheckpoint(0).state).toBe(waiting.state);
  });
});
