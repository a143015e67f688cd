import { describe, expect, it } from 'vitest';
import type { CheckpointHistoryEntry, CoordinatorState } from '../../../lib/checkpoint/coordinator-protocol.ts';
import { summarizeCoordinator, watchLeaseCounters } from '../../../lib/cluster/job-status.ts';

const entry = (checkpointId: number, status: CheckpointHistoryEntry['status']): CheckpointHistoryEntry => ({
  checkpointId,
  status,
  savepoint: false,
  final: false,
  triggeredAt: checkpointId * 10,
  durationMs: 3,
  bytes: 0,
  acknowledgedTasks: 2,
  totalTasks: 2,
  failureReason: status === 'failed' ? 'timeout' : undefined,
});

const state = {
  status: 'running',
  inFlight: undefined,
  history: [entry(1, 'completed'), entry(2, 'completed'), entry(3, 'failed')],
} as unknown as CoordinatorState;

describe('summarizeCoordinator', () => {
  it('finds the last completed checkpoint (not the last entry) and reads a state stored as a map or as JSON text', () => {
    for (const stored of [state, JSON.stringify(state)]) {
      const summary = summarizeCoordinator({ execution: 'e', version: 2, state: stored });
      expect(summary.lastCompleted?.checkpointId).toBe(2);
      expect(summary.inFlight).toBeUndefined();
      expect(summary.history).toHaveLength(3);
      expect(summary.status).toBe('running');
    }
  });

  it('counts the in-flight checkpoint acks and the tasks it waits for', () => {
    const inFlight = {
      checkpointId: 4,
      savepoint: true,
      final: false,
      savepointRequestId: 1,
      triggeredAt: 40,
      phase: 'acknowledging',
      waitingFor: [{ vertex: 0, subtask: 1 }],
      acknowledged: [{}, {}],
    };
    const summary = summarizeCoordinator({ execution: 'e', version: 2, state: { ...state, inFlight } as unknown as CoordinatorState });
    expect(summary.inFlight).toEqual({ checkpointId: 4, savepoint: true, phase: 'acknowledging', triggeredAt: 40, acknowledged: 2, waitingFor: 1 });
  });
});

describe('watchLeaseCounters', () => {
  it('marks a lease moved when its counter, epoch or owner changed between the reads', () => {
    const first = [
      { slot: 0, owner: 'a', epoch: 1, counter: 5 },
      { slot: 1, owner: 'b', epoch: 1, counter: 5 },
      { slot: 2, epoch: 1, counter: 5 },
      { slot: 3, owner: 'c', epoch: 1, counter: 5 },
    ];
    const second = [
      { slot: 0, owner: 'a', epoch: 1, counter: 6 },
      { slot: 1, owner: 'b', epoch: 1, counter: 5 },
      { slot: 2, owner: 'd', epoch: 2, counter: 0 },
      { slot: 3, owner: 'c', epoch: 1, counter: 5 },
      { slot: 4, epoch: 0, counter: 0 },
    ];
    const watched = watchLeaseCounters(first, second, 3000);
    expect(watched.map((l) => l.counterWatch?.moved)).toEqual([true, false, true, false, undefined]);
    expect(watched[0]?.counterWatch?.watchedMs).toBe(3000);
  });
});
