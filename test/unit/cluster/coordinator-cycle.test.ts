import { describe, expect, it } from 'vitest';
import { CheckpointCoordinator } from '../../../lib/checkpoint/coordinator.ts';
import type { TaskStateHandle } from '../../../lib/checkpoint/types.ts';
import type { AckItem } from '../../../lib/cluster/control-items.ts';
import { applyAcks, controlTriggerFor, cycleWait, requestItemOf, splitCommands } from '../../../lib/cluster/coordinator-cycle.ts';

const P = 2;
const tasks = [0, 1].flatMap((vertex) => Array.from({ length: P }, (_, subtask) => ({ vertex, subtask })));

function started(now = 0): CheckpointCoordinator {
  return CheckpointCoordinator.start({ intervalMs: 1000, timeoutMs: 10_000 }, { tasks, maxParallelism: 128, now });
}

function handle(vertex: number, subtask: number, id: number): TaskStateHandle {
  return { task: { vertex, subtask }, vertexName: `v${vertex}`, path: `chk-${id}/task-${vertex}-${subtask}.state`, bytes: 1, sha256: 'x' };
}

function ack(id: number, slot: number, extra: Partial<Extract<AckItem, { kind: 'ack' }>> = {}): AckItem {
  return {
    kind: 'ack',
    checkpointId: id,
    slot,
    owner: 'w',
    epoch: 1,
    handles: [handle(0, slot, id), handle(1, slot, id)],
    committables: { path: `chk-${id}/committables-${slot}-e1.json`, bytes: 2, sha256: `s${slot}` },
    at: 0,
    ...extra,
  };
}

/** A coordinator with checkpoint 1 in flight (triggered at 1000). */
function inFlight(): CheckpointCoordinator {
  const step = started().tick(1000);
  expect(step.commands.map((c) => c.kind)).toEqual(['trigger']);
  return step.coordinator;
}

describe('applyAcks', () => {
  it('an ack item of a slot acknowledges every handle it carries; all slots lead to the metadata commit', () => {
    const one = applyAcks(inFlight(), [ack(1, 0)], 1100);
    expect(one.coordinator.inFlight?.waitingFor).toEqual([{ vertex: 0, subtask: 1 }, { vertex: 1, subtask: 1 }]);
    expect(one.commands).toEqual([]);
    const both = applyAcks(one.coordinator, [ack(1, 0), ack(1, 1)], 1200, one.committables);
    expect(both.coordinator.inFlight?.phase).toBe('committing');
    expect(both.commands.map((c) => c.kind)).toEqual(['commitMetadata']);
    expect(Object.keys(both.committables)).toEqual(['0', '1']);
    // Slot 0's handles again: duplicates, nothing changes.
    expect(both.ignored).toBe(2);
  });

  it('records the epoch of every slot whose ack counts, merged over the epochs known', () => {
    const one = applyAcks(inFlight(), [ack(1, 0, { epoch: 4 })], 1100);
    expect(one.epochs).toEqual({ '0': 4 });
    const both = applyAcks(one.coordinator, [ack(1, 1, { epoch: 2 })], 1200, one.committables, one.epochs);
    expect(both.epochs).toEqual({ '0': 4, '1': 2 });
    // A decline is no ack: its epoch does not count.
    const declined = applyAcks(inFlight(), [{ kind: 'decline', checkpointId: 1, slot: 1, owner: 'w', epoch: 9, reason: 'x', at: 0 }], 1100);
    expect(declined.epochs).toEqual({});
  });

  it('ignores the acks of another checkpoint', () => {
    const out = applyAcks(inFlight(), [ack(7, 0), ack(7, 1)], 1100);
    expect(out.coordinator.inFlight?.waitingFor).toHaveLength(4);
    expect(out.ignored).toBe(2);
    expect(out.committables).toEqual({});
  });

  it('a decline aborts the checkpoint and names the slot', () => {
    const decline: AckItem = { kind: 'decline', checkpointId: 1, slot: 1, owner: 'w', epoch: 3, reason: 'disk full', at: 0 };
    const out = applyAcks(inFlight(), [ack(1, 0), decline], 1100);
    expect(out.coordinator.inFlight).toBeUndefined();
    const abort = out.commands.find((c) => c.kind === 'abort');
    expect(abort).toMatchObject({ checkpointId: 1 });
    expect(abort?.kind === 'abort' && abort.reason).toContain('slot 1 (epoch 3): disk full');
  });

  it('finished tasks of a slot are no longer waited for', () => {
    const finished = ack(1, 1, { handles: [handle(1, 1, 1)], finishedTasks: [{ vertex: 0, subtask: 1 }] });
    const out = applyAcks(inFlight(), [ack(1, 0), finished], 1100);
    expect(out.commands.map((c) => c.kind)).toEqual(['commitMetadata']);
    const commit = out.commands[0];
    expect(commit?.kind === 'commitMetadata' && commit.metadata.finishedTasks).toEqual([{ vertex: 0, subtask: 1 }]);
  });
});

describe('splitCommands', () => {
  it('keeps the metadata write apart from the outbox', () => {
    const all = applyAcks(inFlight(), [ack(1, 0), ack(1, 1)], 1200);
    const committed = all.coordinator.metadataCommitted(1, 1300);
    const split = splitCommands([...all.commands, ...committed.commands]);
    expect(split.write?.kind).toBe('commitMetadata');
    expect(split.outbox.map((c) => c.kind)).toEqual(['notifyComplete']);
  });
});

describe('controlTriggerFor', () => {
  it('describes the checkpoint in flight with the lease generation given', () => {
    expect(controlTriggerFor(inFlight().state, 5)).toEqual({ checkpointId: 1, savepoint: false, timestamp: 1000, leaseGeneration: 5 });
    expect(controlTriggerFor(started().state, 5)).toBeUndefined();
  });

  it('marks the savepoint of a stop', () => {
    const step = started().triggerSavepoint(500, { stop: true });
    expect(controlTriggerFor(step.coordinator.state, 0)).toEqual({ checkpointId: 1, savepoint: true, timestamp: 500, leaseGeneration: 0, stop: true });
  });
});

describe('cycleWait', () => {
  const timing = { now: 1000, deadline: 60_000, ackPollMs: 500 };

  it('polls for acks while a checkpoint is in flight', () => {
    expect(cycleWait(inFlight(), timing)).toEqual({ phase: 'collect', waitSeconds: 1 });
  });

  it('waits for the next periodic trigger, and ends when that is past the deadline', () => {
    expect(cycleWait(started(0), { ...timing, now: 200 })).toEqual({ phase: 'idle', waitSeconds: 1 });
    expect(cycleWait(started(0), { ...timing, now: 200, deadline: 900 })).toEqual({ phase: 'done', waitSeconds: 0 });
    expect(cycleWait(inFlight(), { ...timing, now: 60_000 })).toEqual({ phase: 'done', waitSeconds: 0 });
  });
});

describe('requestItemOf', () => {
  it('finds the request item of a savepoint request id', () => {
    expect(requestItemOf({ a: 1, b: 2 }, 2)).toBe('b');
    expect(requestItemOf(undefined, 2)).toBeUndefined();
  });
});
