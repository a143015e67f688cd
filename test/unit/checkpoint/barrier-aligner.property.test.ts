import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { BarrierElement } from '../../../lib/core/index.ts';
import { waitingForFirstBarrier } from '../../../lib/checkpoint/barrier-aligner.ts';
import type { AlignmentAction, AlignmentState } from '../../../lib/checkpoint/barrier-aligner.ts';

const MAX_ID = 6;
const barrier = (checkpointId: number): BarrierElement => ({ kind: 'barrier', checkpointId, timestamp: checkpointId * 10, savepoint: false });

/** What one channel delivers, in order: barriers of increasing ids (some may be skipped), then maybe its end. */
const channelScript = fc.record({
  barriers: fc.uniqueArray(fc.integer({ min: 1, max: MAX_ID }), { maxLength: MAX_ID }).map((ids) => ids.sort((a, b) => a - b)),
  ends: fc.boolean(),
});
const scheduleEvent = fc.oneof(
  { weight: 8, arbitrary: fc.record({ type: fc.constant('poll' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('cancel' as const), checkpointId: fc.integer({ min: 1, max: MAX_ID }) }) },
);

type Delivered =
  | { type: 'barrier'; channel: number; checkpointId: number }
  | { type: 'end'; channel: number }
  | { type: 'cancel'; checkpointId: number };

interface Logged {
  event: Delivered;
  actions: readonly AlignmentAction[];
  state: AlignmentState;
}

/** Drives the aligner like a task would: it only ever polls channels that are neither blocked nor ended. */
function simulate(scripts: Array<{ barriers: number[]; ends: boolean }>, schedule: Array<{ type: 'poll'; pick: number } | { type: 'cancel'; checkpointId: number }>): Logged[] {
  let state = waitingForFirstBarrier(scripts.length);
  const position = scripts.map(() => 0);
  const log: Logged[] = [];
  const apply = (event: Delivered): void => {
    const step =
      event.type === 'barrier'
        ? state.barrierReceived(event.channel, barrier(event.checkpointId))
        : event.type === 'end'
          ? state.endOfInput(event.channel)
          : state.abortCheckpoint(event.checkpointId);
    state = step.state;
    log.push({ event, actions: step.actions, state });
  };
  for (const item of schedule) {
    if (item.type === 'cancel') {
      apply(item);
      continue;
    }
    const pollable = scripts
      .map((script, channel) => ({ script, channel }))
      .filter(({ script, channel }) => {
        const remaining = script.barriers.length + (script.ends ? 1 : 0) - position[channel]!;
        return remaining > 0 && !state.isBlocked(channel) && !state.isEnded(channel);
      });
    const chosen = pollable[item.pick % Math.max(1, pollable.length)];
    if (chosen === undefined) continue;
    const { script, channel } = chosen;
    const at = position[channel]!;
    position[channel] = at + 1;
    const id = script.barriers[at];
    apply(id === undefined ? { type: 'end', channel } : { type: 'barrier', channel, checkpointId: id });
  }
  return log;
}

/** Independent oracle: the event index at which each checkpoint must be snapshotted or aborted. */
function expectedOutcomes(channelCount: number, log: readonly Logged[]) {
  const snapshots = new Map<number, number>();
  const aborts = new Map<number, { at: number; reason: 'subsumed' | 'cancelled' }>();
  const pendingAtEnd: number[] = [];
  for (let n = 1; n <= MAX_ID; n++) {
    const delivered = new Set<number>();
    const ended = new Set<number>();
    let started: number | undefined;
    let done: number | undefined;
    let superseded: number | undefined;
    let supersededBy: Delivered | undefined;
    log.forEach(({ event }, i) => {
      if (superseded === undefined && ((event.type === 'barrier' && event.checkpointId > n) || (event.type === 'cancel' && event.checkpointId >= n))) {
        superseded = i;
        supersededBy = event;
      }
      if (event.type === 'barrier' && event.checkpointId === n) {
        delivered.add(event.channel);
        if (started === undefined && superseded === undefined) started = i;
      }
      if (event.type === 'end') ended.add(event.channel);
      let all = true;
      for (let c = 0; c < channelCount; c++) if (!delivered.has(c) && !ended.has(c)) all = false;
      if (done === undefined && all && delivered.size > 0) done = i;
    });
    if (started === undefined) continue;
    if (done !== undefined && (superseded === undefined || superseded > done)) snapshots.set(n, done);
    else if (superseded !== undefined) {
      const reason = supersededBy?.type === 'cancel' && supersededBy.checkpointId === n ? 'cancelled' : 'subsumed';
      aborts.set(n, { at: superseded, reason });
    } else pendingAtEnd.push(n);
  }
  return { snapshots, aborts, pendingAtEnd };
}

describe('barrier alignment under random interleavings', () => {
  it('snapshots each checkpoint that is not superseded exactly once, and blocks exactly the aligned channels', () => {
    fc.assert(
      fc.property(fc.array(channelScript, { minLength: 1, maxLength: 5 }), fc.array(scheduleEvent, { maxLength: 80 }), (scripts, schedule) => {
        const log = simulate(scripts, schedule);
        const expected = expectedOutcomes(scripts.length, log);

        const snapshots = new Map<number, number>();
        const aborts = new Map<number, { at: number; reason: 'subsumed' | 'cancelled' }>();
        let maxBarrier = 0;
        let maxCancel = 0;
        const deliveredBy = new Map<number, Set<number>>();
        log.forEach(({ event, actions, state }, i) => {
          for (const action of actions) {
            if (action.kind === 'snapshot') {
              expect(snapshots.has(action.barrier.checkpointId), `checkpoint ${action.barrier.checkpointId} snapshotted twice`).toBe(false);
              expect(action.barrier).toEqual(barrier(action.barrier.checkpointId));
              snapshots.set(action.barrier.checkpointId, i);
            } else if (action.kind === 'abort') {
              expect(aborts.has(action.checkpointId)).toBe(false);
              aborts.set(action.checkpointId, { at: i, reason: action.reason });
            }
          }
          if (event.type === 'barrier') {
            // A barrier is ignored exactly when a newer one or a cancellation of it (or a newer one) came first.
            const ignored = actions.some((a) => a.kind === 'ignored');
            expect(ignored).toBe(event.checkpointId <= maxCancel || event.checkpointId < maxBarrier);
            maxBarrier = Math.max(maxBarrier, event.checkpointId);
            const set = deliveredBy.get(event.checkpointId) ?? new Set<number>();
            deliveredBy.set(event.checkpointId, set.add(event.channel));
          } else if (event.type === 'cancel') {
            maxCancel = Math.max(maxCancel, event.checkpointId);
          }
          // Blocked channels are exactly those that delivered the barrier being aligned; none after a snapshot.
          const pending = state.pendingCheckpointId;
          const blocked = state.blockedChannels();
          if (pending === undefined) expect(blocked).toEqual([]);
          else expect(blocked).toEqual([...(deliveredBy.get(pending) ?? [])].sort((a, b) => a - b));
          if (actions.some((a) => a.kind === 'snapshot')) expect(blocked).toEqual([]);
          for (let c = 0; c < scripts.length; c++) expect(state.isBlocked(c)).toBe(blocked.includes(c));
        });

        expect(snapshots).toEqual(expected.snapshots);
        expect(aborts).toEqual(expected.aborts);
        const last = log.at(-1)?.state;
        expect(last?.pendingCheckpointId === undefined ? [] : [last.pendingCheckpointId]).toEqual(expected.pendingAtEnd);
      }),
      { numRuns: 400 },
    );
  });
});
