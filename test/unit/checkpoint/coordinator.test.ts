import { describe, expect, it } from 'vitest';
import { ConfigError, InternalError } from '../../../lib/core/index.ts';
import {
  CheckpointCoordinator,
  compileCoordinatorOptions,
  taskStatePath,
  type CheckpointCoordinatorOptions,
  type CoordinatorCommand,
  type CoordinatorInit,
  type CoordinatorState,
  type TaskId,
  type TaskStateHandle,
} from '../../../lib/checkpoint/index.ts';

const T0 = 1_000;
const SOURCE: TaskId = { vertex: 0, subtask: 0 };
const MAP_0: TaskId = { vertex: 1, subtask: 0 };
const MAP_1: TaskId = { vertex: 1, subtask: 1 };
const TASKS = [MAP_1, SOURCE, MAP_0];

const handle = (checkpointId: number, task: TaskId, bytes = 100): TaskStateHandle => ({
  task,
  vertexName: task.vertex === 0 ? 'source' : 'map',
  path: taskStatePath({ kind: 'checkpoint', checkpointId }, task),
  bytes,
  sha256: 'a'.repeat(64),
});

function start(options: Partial<CheckpointCoordinatorOptions> = {}, init: Partial<CoordinatorInit> = {}): CheckpointCoordinator {
  return CheckpointCoordinator.start({ intervalMs: 100, ...options }, { tasks: TASKS, maxParallelism: 128, now: T0, ...init });
}

const kinds = (commands: readonly CoordinatorCommand[]): string[] => commands.map((c) => c.kind);

/** Acks from every expected task at `now`; returns the coordinator awaiting the metadata commit. */
function ackAll(c: CheckpointCoordinator, checkpointId: number, now: number): { coordinator: CheckpointCoordinator; commands: CoordinatorCommand[] } {
  const commands: CoordinatorCommand[] = [];
  for (const task of c.inFlight?.waitingFor ?? []) {
    const step = c.ack(checkpointId, handle(checkpointId, task), now);
    expect(step.outcome).toBe('accepted');
    c = step.coordinator;
    commands.push(...step.commands);
  }
  return { coordinator: c, commands };
}

/** Acks and commits the in-flight checkpoint; returns the commands of the commit step. */
function complete(c: CheckpointCoordinator, now: number): { coordinator: CheckpointCoordinator; commands: readonly CoordinatorCommand[] } {
  const id = c.inFlight!.checkpointId;
  const acked = ackAll(c, id, now);
  // A savepoint's files go to its own directory, a checkpoint's metadata to checkpoint storage.
  expect(kinds(acked.commands)).toEqual([c.inFlight!.savepoint ? 'writeSavepoint' : 'commitMetadata']);
  return acked.coordinator.metadataCommitted(id, now);
}

describe('operator records', () => {
  it('writes what each operator`s state means into every checkpoint`s metadata', () => {
    const operators = [{ nodeId: 2, vertex: 1, name: 'account totals', stateful: true, meaning: { operator: 'window', sizeMs: 10_000 } }];
    const c = start({}, { operators }).tick(T0 + 100).coordinator;
    const acked = ackAll(c, 1, T0 + 110);
    expect(acked.commands).toMatchObject([{ kind: 'commitMetadata', metadata: { checkpointId: 1, operators } }]);
  });
});

describe('coordinator options', () => {
  it('fills in documented defaults', () => {
    expect(compileCoordinatorOptions({ intervalMs: 5000 })).toEqual({
      intervalMs: 5000,
      minPauseMs: 0,
      timeoutMs: 600_000,
      retain: 3,
      historySize: 20,
      tolerableFailures: 3,
      failureBackoffMs: 500,
      maxFailureBackoffMs: 30_000,
    });
  });

  it('refuses invalid values with ConfigError', () => {
    const bad: CheckpointCoordinatorOptions[] = [
      { intervalMs: 0 },
      { intervalMs: 1.5 },
      { intervalMs: Number.NaN },
      { intervalMs: undefined as unknown as number },
      { intervalMs: 10, minPauseMs: -1 },
      { intervalMs: 10, timeoutMs: 0 },
      { intervalMs: 10, retain: 0 },
      { intervalMs: 10, historySize: 0 },
      { intervalMs: 10, tolerableFailures: -1 },
      { intervalMs: 10, failureBackoffMs: -1 },
      { intervalMs: 10, failureBackoffMs: 100, maxFailureBackoffMs: 99 },
    ];
    for (const options of bad) expect(() => compileCoordinatorOptions(options), JSON.stringify(options)).toThrow(ConfigError);
    expect(() => start({ retain: 0 })).toThrow(/retain must be an integer >= 1, got 0/);
  });

  it('refuses a plan with missing or repeated subtasks', () => {
    expect(() => start({}, { tasks: [] })).toThrow(InternalError);
    expect(() => start({}, { tasks: [SOURCE, SOURCE] })).toThrow(/listed twice/);
    expect(() => start({}, { tasks: [SOURCE, MAP_1] })).toThrow(/lacks subtask 0/);
    expect(() => start({}, { maxParallelism: 0 })).toThrow(InternalError);
  });
});

describe('checkpoint coordinator', () => {
  it('triggers periodically, commits metadata once every task acked, then notifies', () => {
    let c = start();
    expect(c.nextWakeup(T0)).toBe(T0 + 100);
    expect(c.tick(T0 + 99).commands).toEqual([]);
    const trigger = c.tick(T0 + 100);
    expect(trigger.commands).toEqual([
      { kind: 'trigger', checkpointId: 1, savepoint: false, timestamp: T0 + 100, final: false, savepointRequestId: undefined },
    ]);
    c = trigger.coordinator;
    expect(c.history()[0]).toMatchObject({ checkpointId: 1, status: 'in-progress', totalTasks: 3, acknowledgedTasks: 0 });

    let step = c.ack(1, handle(1, MAP_1, 30), T0 + 110);
    expect(step).toMatchObject({ outcome: 'accepted', commands: [] });
    step = step.coordinator.ack(1, handle(1, SOURCE, 10), T0 + 120);
    expect(step.commands).toEqual([]);
    step = step.coordinator.ack(1, handle(1, MAP_0, 20), T0 + 130);
    expect(step.outcome).toBe('accepted');
    expect(step.commands).toEqual([
      {
        kind: 'commitMetadata',
        metadata: {
          version: 1,
          checkpointId: 1,
          savepoint: false,
          triggeredAt: T0 + 100,
          completedAt: T0 + 130,
          maxParallelism: 128,
          parallelism: { 0: 1, 1: 2 },
          tasks: [handle(1, SOURCE, 10), handle(1, MAP_0, 20), handle(1, MAP_1, 30)],
        },
      },
    ]);
    c = step.coordinator;
    expect(c.inFlight?.phase).toBe('committing');
    // No timeout while the metadata commit is in the driver's hands.
    expect(c.nextWakeup(T0 + 130)).toBeUndefined();
    expect(c.tick(T0 + 10_000_000).commands).toEqual([]);

    const done = c.metadataCommitted(1, T0 + 150);
    expect(done.commands).toEqual([{ kind: 'notifyComplete', checkpointId: 1, final: false }]);
    c = done.coordinator;
    expect(c.inFlight).toBeUndefined();
    expect(c.history()).toEqual([
      {
        checkpointId: 1,
        status: 'completed',
        savepoint: false,
        final: false,
        triggeredAt: T0 + 100,
        durationMs: 50,
        bytes: 60,
        acknowledgedTasks: 3,
        totalTasks: 3,
        failureReason: undefined,
      },
    ]);
    expect(c.nextWakeup(T0 + 150)).toBe(T0 + 200);
    expect(c.tick(T0 + 200).commands).toMatchObject([{ kind: 'trigger', checkpointId: 2 }]);
  });

  it('keeps at most one checkpoint in flight, however late the ticks', () => {
    let c = start().tick(T0 + 100).coordinator;
    for (const now of [T0 + 200, T0 + 300, T0 + 5000]) {
      const step = c.tick(now);
      expect(step.commands).toEqual([]);
      c = step.coordinator;
    }
    expect(c.nextWakeup(T0 + 5000)).toBe(T0 + 100 + 600_000);
    // A long checkpoint: the next periodic one is due at once when it ends (no minimum pause).
    c = complete(c, T0 + 5000).coordinator;
    expect(c.nextWakeup(T0 + 5000)).toBe(T0 + 5000);
    expect(c.tick(T0 + 5000).commands).toMatchObject([{ kind: 'trigger', checkpointId: 2 }]);
  });

  it('reports late, duplicate, unknown and unexpected acks and ignores them', () => {
    let c = start().tick(T0 + 100).coordinator;
    const first = c.ack(1, handle(1, SOURCE), T0 + 101);
    c = first.coordinator;
    const dup = c.ack(1, handle(1, SOURCE), T0 + 102);
    expect(dup).toMatchObject({ outcome: 'duplicate', commands: [] });
    expect(dup.coordinator.state).toEqual(c.state);
    expect(c.ack(7, handle(7, MAP_0), T0 + 102)).toMatchObject({ outcome: 'unknown', commands: [] });
    expect(c.ack(1, handle(1, { vertex: 5, subtask: 0 }), T0 + 102)).toMatchObject({ outcome: 'unexpectedTask', commands: [] });
    c = complete(c, T0 + 110).coordinator;
    const late = c.ack(1, handle(1, MAP_0), T0 + 120);
    expect(late).toMatchObject({ outcome: 'late', commands: [] });
    expect(late.coordinator.state).toEqual(c.state);
  });

  it('ignores acks for an aborted checkpoint', () => {
    let c = start().tick(T0 + 100).coordinator;
    c = c.ack(1, handle(1, SOURCE), T0 + 101).coordinator;
    const aborted = c.abort(1, 'declined by vertex 1 subtask 0: snapshot failed', T0 + 105);
    expect(aborted.outcome).toBe('aborted');
    expect(aborted.commands).toEqual([{ kind: 'abort', checkpointId: 1, reason: 'declined by vertex 1 subtask 0: snapshot failed' }]);
    c = aborted.coordinator;
    expect(c.ack(1, handle(1, MAP_0), T0 + 106)).toMatchObject({ outcome: 'late', commands: [] });
    expect(c.abort(1, 'again', T0 + 107)).toMatchObject({ outcome: 'ignored', commands: [] });
    expect(c.history()[0]).toMatchObject({ checkpointId: 1, status: 'failed', durationMs: 5, bytes: 100, failureReason: 'declined by vertex 1 subtask 0: snapshot failed' });
    // The interval counts from the aborted trigger.
    expect(c.nextWakeup(T0 + 107)).toBe(T0 + 200);
  });

  it('aborts a checkpoint that is not fully acknowledged before its timeout', () => {
    let c = start({ timeoutMs: 500 }).tick(T0 + 100).coordinator;
    c = c.ack(1, handle(1, SOURCE), T0 + 200).coordinator;
    expect(c.nextWakeup(T0 + 200)).toBe(T0 + 600);
    expect(c.tick(T0 + 599).commands).toEqual([]);
    const expired = c.tick(T0 + 600);
    // The interval has long passed and there is no minimum pause: the next one is triggered in the same tick.
    expect(expired.commands).toEqual([
      { kind: 'abort', checkpointId: 1, reason: 'checkpoint 1 expired after 500 ms waiting for 2 task(s), among them vertex 1 subtask 0' },
      { kind: 'trigger', checkpointId: 2, savepoint: false, timestamp: T0 + 600, final: false, savepointRequestId: undefined },
    ]);
    expect(expired.coordinator.history()[1]).toMatchObject({ checkpointId: 1, status: 'failed', durationMs: 500 });

    const paused = start({ timeoutMs: 500, minPauseMs: 50 }).tick(T0 + 100).coordinator.tick(T0 + 600);
    expect(kinds(paused.commands)).toEqual(['abort']);
    expect(paused.coordinator.nextWakeup(T0 + 600)).toBe(T0 + 650);
  });

  it('expires on any input, so an ack after the deadline is late even without a tick', () => {
    const c = start({ timeoutMs: 500 }).tick(T0 + 100).coordinator;
    const step = c.ack(1, handle(1, SOURCE), T0 + 600);
    expect(step.outcome).toBe('late');
    expect(kinds(step.commands)).toEqual(['abort']);
  });

  it('waits the minimum pause after a checkpoint ends before the next periodic trigger', () => {
    let c = start({ minPauseMs: 300 }).tick(T0 + 100).coordinator;
    c = complete(c, T0 + 150).coordinator;
    expect(c.nextWakeup(T0 + 150)).toBe(T0 + 450);
    expect(c.tick(T0 + 200).commands).toEqual([]);
    expect(c.tick(T0 + 449).commands).toEqual([]);
    const step = c.tick(T0 + 450);
    expect(step.commands).toMatchObject([{ kind: 'trigger', checkpointId: 2, timestamp: T0 + 450 }]);
    // An abort is an end too.
    c = step.coordinator.abort(2, 'declined', T0 + 460).coordinator;
    expect(c.nextWakeup(T0 + 460)).toBe(T0 + 760);
  });

  it('queues a savepoint behind the in-flight checkpoint and triggers it as soon as that ends', () => {
    let c = start({ minPauseMs: 10_000 }).tick(T0 + 100).coordinator;
    const requested = c.triggerSavepoint(T0 + 110);
    expect(requested.requestId).toBe(1);
    expect(requested.commands).toEqual([]);
    c = requested.coordinator;
    expect(c.state.queuedSavepoints).toEqual([1]);
    const second = c.triggerSavepoint(T0 + 111);
    expect(second.requestId).toBe(2);
    c = second.coordinator;

    const done = complete(c, T0 + 120);
    // Neither the minimum pause nor the interval holds a savepoint back.
    expect(done.commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 1, final: false },
      { kind: 'trigger', checkpointId: 2, savepoint: true, timestamp: T0 + 120, final: false, savepointRequestId: 1 },
    ]);
    c = done.coordinator;
    // The second waits behind the first, even when the first fails.
    const failed = c.abort(2, 'declined', T0 + 130);
    expect(failed.commands).toEqual([
      { kind: 'abort', checkpointId: 2, reason: 'declined' },
      { kind: 'savepointFailed', requestId: 1, checkpointId: 2, reason: 'declined' },
      { kind: 'trigger', checkpointId: 3, savepoint: true, timestamp: T0 + 130, final: false, savepointRequestId: 2 },
    ]);
    c = failed.coordinator;
    const acked = ackAll(c, 3, T0 + 140);
    const metadata = acked.commands[0];
    expect(metadata).toMatchObject({ kind: 'writeSavepoint', requestId: 2, stop: false, metadata: { checkpointId: 3, savepoint: true } });
    c = acked.coordinator.metadataCommitted(3, T0 + 150).coordinator;
    expect(c.history().map((h) => [h.checkpointId, h.savepoint, h.status])).toEqual([
      [3, true, 'completed'],
      [2, true, 'failed'],
      [1, false, 'completed'],
    ]);
    // Savepoints do not count for retention.
    expect(c.retainedCheckpointIds).toEqual([1]);
  });

  it('triggers a savepoint at once when nothing is in flight', () => {
    const step = start().triggerSavepoint(T0 + 5);
    expect(step.commands).toEqual([
      { kind: 'trigger', checkpointId: 1, savepoint: true, timestamp: T0 + 5, final: false, savepointRequestId: 1 },
    ]);
  });

  it('takes the final checkpoint at once when every source finished, even inside the interval', () => {
    let c = start({ minPauseMs: 1000 });
    const step = c.allSourcesFinished(T0 + 10);
    expect(step.commands).toEqual([
      { kind: 'trigger', checkpointId: 1, savepoint: false, timestamp: T0 + 10, final: true, savepointRequestId: undefined },
    ]);
    c = step.coordinator;
    expect(c.allSourcesFinished(T0 + 11).commands).toEqual([]);
    const done = complete(c, T0 + 20);
    expect(done.commands).toEqual([{ kind: 'notifyComplete', checkpointId: 1, final: true }]);
    c = done.coordinator;
    expect(c.status).toBe('finished');
    expect(c.nextWakeup(T0 + 20)).toBeUndefined();
    expect(c.tick(T0 + 100_000).commands).toEqual([]);
    expect(c.triggerSavepoint(T0 + 30).commands).toEqual([{ kind: 'savepointRejected', requestId: 1, reason: 'the job finished' }]);
  });

  it('takes the final checkpoint right after the in-flight one, after queued savepoints, and retries it if it fails', () => {
    let c = start().tick(T0 + 100).coordinator;
    c = c.triggerSavepoint(T0 + 101).coordinator;
    const finished = c.allSourcesFinished(T0 + 102);
    expect(finished.commands).toEqual([]);
    c = finished.coordinator;
    expect(c.nextWakeup(T0 + 102)).toBe(T0 + 100 + 600_000);
    let step = complete(c, T0 + 110);
    expect(step.commands).toMatchObject([
      { kind: 'notifyComplete', checkpointId: 1 },
      { kind: 'trigger', checkpointId: 2, savepoint: true, final: false },
    ]);
    step = complete(step.coordinator, T0 + 120);
    // A savepoint that does not stop the job answers its request; the tasks are not notified.
    expect(step.commands).toMatchObject([
      { kind: 'savepointComplete', requestId: 1, checkpointId: 2 },
      { kind: 'trigger', checkpointId: 3, savepoint: false, final: true },
    ]);
    // A savepoint requested during the final checkpoint is rejected when the job finishes.
    c = step.coordinator.triggerSavepoint(T0 + 121).coordinator;
    step = c.abort(3, 'declined', T0 + 125);
    expect(step.commands).toMatchObject([
      { kind: 'abort', checkpointId: 3 },
      { kind: 'trigger', checkpointId: 4, savepoint: true },
    ]);
    step = complete(step.coordinator, T0 + 126);
    expect(step.commands).toMatchObject([
      { kind: 'savepointComplete', checkpointId: 4 },
      { kind: 'trigger', checkpointId: 5, final: true },
    ]);
    c = step.coordinator.triggerSavepoint(T0 + 127).coordinator;
    step = complete(c, T0 + 130);
    expect(step.commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 5, final: true },
      { kind: 'savepointRejected', requestId: 3, reason: 'the job finished' },
    ]);
    expect(step.coordinator.status).toBe('finished');
  });

  it('retains the newest complete checkpoints, counting those found in storage, and discards older ones', () => {
    let c = start({ retain: 2 }, { lastCheckpointId: 12, retainedCheckpointIds: [11, 12, 9] });
    expect(c.retainedCheckpointIds).toEqual([9, 11, 12]);
    c = c.tick(T0 + 100).coordinator;
    let step = complete(c, T0 + 110);
    expect(step.commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 13, final: false },
      { kind: 'discard', checkpointIds: [9, 11] },
    ]);
    c = step.coordinator;
    expect(c.retainedCheckpointIds).toEqual([12, 13]);
    // An aborted checkpoint changes nothing.
    c = c.tick(T0 + 200).coordinator.abort(14, 'declined', T0 + 210).coordinator;
    expect(c.retainedCheckpointIds).toEqual([12, 13]);
    step = complete(c.tick(T0 + 300).coordinator, T0 + 310);
    expect(step.commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 15, final: false },
      { kind: 'discard', checkpointIds: [12] },
    ]);
    expect(step.coordinator.retainedCheckpointIds).toEqual([13, 15]);
  });

  it('numbers checkpoints after the restored one and never reuses an id it knows of', () => {
    expect(start({}, { lastCheckpointId: 12 }).tick(T0 + 100).commands).toMatchObject([{ kind: 'trigger', checkpointId: 13 }]);
    expect(start({}, { lastCheckpointId: 12, retainedCheckpointIds: [14] }).tick(T0 + 100).commands).toMatchObject([
      { kind: 'trigger', checkpointId: 15 },
    ]);
    // A restart within the run carries over the ids of checkpoints aborted by the failure.
    let c = start({}, { lastCheckpointId: 3 }).tick(T0 + 100).coordinator;
    c = c.taskFailed(MAP_0, 'boom', T0 + 110).coordinator;
    const next = start({}, { lastCheckpointId: c.lastCheckpointId, retainedCheckpointIds: [3], history: c.state.history });
    expect(next.tick(T0 + 100).commands).toMatchObject([{ kind: 'trigger', checkpointId: 5 }]);
    expect(next.history().map((h) => [h.checkpointId, h.status])).toEqual([[4, 'failed']]);
    // Ids keep increasing whatever happens to each checkpoint.
    let d = start({ timeoutMs: 50 });
    const ids: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const now = T0 + i * 100;
      const step = i % 3 === 0 ? d.triggerSavepoint(now) : d.tick(now);
      for (const cmd of step.commands) if (cmd.kind === 'trigger') ids.push(cmd.checkpointId);
      d = step.coordinator;
      if (i % 2 === 0 && d.inFlight !== undefined) d = complete(d, now + 1).coordinator;
    }
    expect(ids).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('aborts the in-flight checkpoint when a task fails and stops triggering', () => {
    let c = start().tick(T0 + 100).coordinator;
    c = c.triggerSavepoint(T0 + 101).coordinator;
    const failed = c.taskFailed(MAP_1, 'user function threw', T0 + 105);
    expect(failed.commands).toEqual([
      { kind: 'abort', checkpointId: 1, reason: 'vertex 1 subtask 1 failed: user function threw' },
      { kind: 'savepointRejected', requestId: 1, reason: 'the savepoint was not triggered because vertex 1 subtask 1 failed: user function threw' },
    ]);
    c = failed.coordinator;
    expect(c.status).toBe('stopped');
    expect(c.nextWakeup(T0 + 105)).toBeUndefined();
    expect(c.tick(T0 + 10_000).commands).toEqual([]);
    expect(c.taskFailed(MAP_0, 'again', T0 + 106).commands).toEqual([]);
    expect(c.allSourcesFinished(T0 + 107).commands).toEqual([]);
    expect(c.triggerSavepoint(T0 + 108).commands).toEqual([
      { kind: 'savepointRejected', requestId: 2, reason: 'the job is stopping after a task failure' },
    ]);
  });

  it('lets a checkpoint whose metadata is being committed complete after a task failure, without notifying', () => {
    let c = start({ retain: 1 }, { retainedCheckpointIds: [] }).tick(T0 + 100).coordinator;
    c = complete(c, T0 + 101).coordinator.tick(T0 + 200).coordinator;
    c = ackAll(c, 2, T0 + 210).coordinator;
    const failed = c.taskFailed(SOURCE, 'crash', T0 + 220);
    expect(failed.commands).toEqual([]);
    const done = failed.coordinator.metadataCommitted(2, T0 + 230);
    expect(done.commands).toEqual([{ kind: 'discard', checkpointIds: [1] }]);
    expect(done.coordinator.history()[0]).toMatchObject({ checkpointId: 2, status: 'completed' });
    // A failed commit is reported as an abort instead.
    const other = ackAll(start().tick(T0 + 100).coordinator, 1, T0 + 110).coordinator.abort(1, 'metadata write failed: EIO', T0 + 120);
    expect(other).toMatchObject({ outcome: 'aborted', commands: [{ kind: 'abort', checkpointId: 1, reason: 'metadata write failed: EIO' }] });
  });

  it('refuses a metadata commit it did not ask for', () => {
    const c = start().tick(T0 + 100).coordinator;
    expect(() => c.metadataCommitted(1, T0 + 110)).toThrow(/checkpoint 1 is acknowledging/);
    expect(() => start().metadataCommitted(1, T0)).toThrow(InternalError);
  });

  it('stops waiting for a task that finished for good and records it in the metadata', () => {
    let c = start().tick(T0 + 100).coordinator;
    c = c.ack(1, handle(1, SOURCE), T0 + 101).coordinator;
    c = c.ack(1, handle(1, MAP_0), T0 + 102).coordinator;
    const finished = c.taskFinished(MAP_1, T0 + 103);
    expect(finished.commands).toEqual([
      {
        kind: 'commitMetadata',
        metadata: expect.objectContaining({ checkpointId: 1, tasks: [handle(1, SOURCE), handle(1, MAP_0)], finishedTasks: [MAP_1] }),
      },
    ]);
    c = finished.coordinator.metadataCommitted(1, T0 + 104).coordinator;
    expect(c.history()[0]).toMatchObject({ acknowledgedTasks: 2, totalTasks: 2 });
    expect(c.taskFinished(MAP_1, T0 + 105).commands).toEqual([]);
    expect(() => c.taskFinished({ vertex: 9, subtask: 0 }, T0 + 105)).toThrow(/not a task of the plan/);
    // Later checkpoints neither wait for it nor accept its acks.
    c = c.tick(T0 + 200).coordinator;
    expect(c.inFlight?.waitingFor).toEqual([SOURCE, MAP_0]);
    expect(c.ack(2, handle(2, MAP_1), T0 + 201).outcome).toBe('unexpectedTask');
    // A task that acked and then finished keeps its state in the checkpoint and is not listed as finished.
    c = c.ack(2, handle(2, SOURCE), T0 + 202).coordinator.taskFinished(SOURCE, T0 + 203).coordinator;
    const last = c.ack(2, handle(2, MAP_0), T0 + 204);
    expect(last.commands).toMatchObject([{ kind: 'commitMetadata', metadata: { tasks: [handle(2, SOURCE), handle(2, MAP_0)], finishedTasks: [MAP_1] } }]);
  });

  it('commits at once when every task has finished', () => {
    let c = start();
    for (const t of TASKS) c = c.taskFinished(t, T0 + 1).coordinator;
    const step = c.allSourcesFinished(T0 + 2);
    expect(kinds(step.commands)).toEqual(['trigger', 'commitMetadata']);
    expect(step.commands[1]).toMatchObject({ metadata: { tasks: [], finishedTasks: [SOURCE, MAP_0, MAP_1] } });
  });

  it('keeps a bounded history, newest first', () => {
    let c = start({ historySize: 3 });
    for (let i = 1; i <= 5; i++) {
      c = c.tick(T0 + i * 100).coordinator;
      c = i === 4 ? c.abort(4, 'declined', T0 + i * 100 + 1).coordinator : complete(c, T0 + i * 100 + 1).coordinator;
    }
    expect(c.history().map((h) => [h.checkpointId, h.status])).toEqual([
      [5, 'completed'],
      [4, 'failed'],
      [3, 'completed'],
    ]);
  });

  it('continues identically from its state after a JSON round trip', () => {
    const options = compileCoordinatorOptions({ intervalMs: 100 });
    let a = start().tick(T0 + 100).coordinator;
    a = a.ack(1, handle(1, SOURCE), T0 + 101).coordinator.triggerSavepoint(T0 + 102).coordinator;
    const state = JSON.parse(JSON.stringify(a.state)) as CoordinatorState;
    const b = CheckpointCoordinator.resume(options, state);
    const stepA = complete(a, T0 + 110);
    const stepB = complete(b, T0 + 110);
    expect(stepB.commands).toEqual(stepA.commands);
    expect(stepB.coordinator.nextWakeup(T0 + 110)).toBe(stepA.coordinator.nextWakeup(T0 + 110));
    expect(stepB.coordinator.history()).toEqual(stepA.coordinator.history());
  });

  describe('failing checkpoints', () => {
    /** Aborts the in-flight checkpoint as a failing storage write would; returns the step. */
    const failInFlight = (c: CheckpointCoordinator, now: number) => c.abort(c.inFlight!.checkpointId, 'could not write: ENOSPC', now);

    it('retries a failing final checkpoint with a doubling backoff, not at once', () => {
      let c = start({ failureBackoffMs: 100, maxFailureBackoffMs: 250, tolerableFailures: 10 }).allSourcesFinished(T0 + 10).coordinator;
      let now = T0 + 10;
      const waits: number[] = [];
      for (let i = 0; i < 4; i++) {
        const failed = failInFlight(c, now);
        expect(kinds(failed.commands)).toEqual(['abort']);
        c = failed.coordinator;
        expect(c.inFlight).toBeUndefined();
        const at = c.nextWakeup(now)!;
        waits.push(at - now);
        // Nothing is triggered before the backoff has passed, however often the driver ticks.
        expect(c.tick(at - 1).commands).toEqual([]);
        const retried = c.tick(at);
        expect(retried.commands).toMatchObject([{ kind: 'trigger', final: true }]);
        c = retried.coordinator;
        now = at;
      }
      expect(waits).toEqual([100, 200, 250, 250]);
      // A success ends the retries and the job finishes.
      expect(complete(c, now + 1).coordinator.status).toBe('finished');
    });

    it('fails the job when more consecutive checkpoints fail than tolerated, and then triggers nothing', () => {
      let c = start({ tolerableFailures: 2, failureBackoffMs: 0 }).allSourcesFinished(T0).coordinator;
      for (let i = 1; i <= 2; i++) {
        const step = failInFlight(c, T0 + i);
        expect(kinds(step.commands)).toEqual(['abort', 'trigger']);
        c = step.coordinator;
      }
      c = c.triggerSavepoint(T0 + 3).coordinator;
      const last = failInFlight(c, T0 + 4);
      expect(last.commands).toEqual([
        { kind: 'abort', checkpointId: 3, reason: 'could not write: ENOSPC' },
        { kind: 'failJob', failures: 3, tolerated: 2, checkpointId: 3, reason: 'could not write: ENOSPC' },
        { kind: 'savepointRejected', requestId: 1, reason: 'the savepoint was not triggered because 3 checkpoints failed in a row' },
      ]);
      c = last.coordinator;
      expect(c.status).toBe('stopped');
      expect(c.nextWakeup(T0 + 5)).toBeUndefined();
      expect(c.tick(T0 + 1_000_000).commands).toEqual([]);
    });

    it('counts periodic checkpoints that time out or fail, and resets the count on success; savepoints do not count', () => {
      let c = start({ tolerableFailures: 1, timeoutMs: 50 }).tick(T0 + 100).coordinator;
      // First failure: a timeout, tolerated.
      let step = c.tick(T0 + 150);
      expect(kinds(step.commands)).toEqual(['abort']);
      c = step.coordinator.tick(T0 + 200).coordinator;
      // A success resets the count.
      c = complete(c, T0 + 210).coordinator;
      c = c.tick(T0 + 300).coordinator;
      c = failInFlight(c, T0 + 301).coordinator;
      // A failed savepoint in between neither counts nor resets.
      c = c.triggerSavepoint(T0 + 302).coordinator;
      step = failInFlight(c, T0 + 303);
      expect(kinds(step.commands)).toEqual(['abort', 'savepointFailed']);
      // The interval counts from the savepoint's trigger.
      c = step.coordinator.tick(T0 + 402).coordinator;
      step = failInFlight(c, T0 + 403);
      expect(step.commands).toMatchObject([{ kind: 'abort' }, { kind: 'failJob', failures: 2, tolerated: 1 }]);
    });

    it('does not count the checkpoint a task failure aborts', () => {
      const c = start({ tolerableFailures: 0 }).tick(T0 + 100).coordinator;
      expect(kinds(c.taskFailed(MAP_0, 'boom', T0 + 101).commands)).toEqual(['abort']);
    });
  });
});
