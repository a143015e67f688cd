import { describe, expect, it } from 'vitest';
import { InternalError } from '../../../lib/core/index.ts';
import {
  CheckpointCoordinator,
  taskStatePath,
  type CoordinatorCommand,
  type CoordinatorInit,
  type TaskId,
  type TaskStateHandle,
} from '../../../lib/checkpoint/index.ts';

const T0 = 1_000;
const SOURCE_0: TaskId = { vertex: 0, subtask: 0 };
const SOURCE_1: TaskId = { vertex: 0, subtask: 1 };
const SINK: TaskId = { vertex: 1, subtask: 0 };
const TASKS = [SOURCE_0, SOURCE_1, SINK];

const handle = (checkpointId: number, task: TaskId): TaskStateHandle => ({
  task,
  vertexName: task.vertex === 0 ? 'source' : 'sink',
  path: taskStatePath({ kind: 'checkpoint', checkpointId }, task),
  bytes: 10,
  sha256: 'b'.repeat(64),
});

function start(init: Partial<CoordinatorInit> = {}): CheckpointCoordinator {
  return CheckpointCoordinator.start({ intervalMs: 100 }, { tasks: TASKS, sourceTasks: [SOURCE_0, SOURCE_1], maxParallelism: 128, now: T0, ...init });
}

const kinds = (commands: readonly CoordinatorCommand[]): string[] => commands.map((c) => c.kind);

/** Acks from every task the in-flight checkpoint waits for; returns the step of the last ack. */
function ackAll(c: CheckpointCoordinator, now: number): { coordinator: CheckpointCoordinator; commands: readonly CoordinatorCommand[] } {
  const f = c.inFlight!;
  let step: { coordinator: CheckpointCoordinator; commands: readonly CoordinatorCommand[] } = { coordinator: c, commands: [] };
  for (const task of f.waitingFor) step = step.coordinator.ack(f.checkpointId, handle(f.checkpointId, task), now);
  return step;
}

describe('sourceFinished', () => {
  it('counts each source task once and takes the final checkpoint after the last one', () => {
    let c = start();
    let step = c.sourceFinished(SOURCE_0, T0 + 1);
    expect(step.commands).toEqual([]);
    c = step.coordinator;
    // The same source again does not count twice, and a task that is not a source does not count at all.
    expect(c.sourceFinished(SOURCE_0, T0 + 2).commands).toEqual([]);
    c = c.sourceFinished(SOURCE_0, T0 + 2).coordinator.sourceFinished(SINK, T0 + 3).coordinator;
    expect(c.state.finalRequested).toBe(false);
    step = c.sourceFinished(SOURCE_1, T0 + 4);
    expect(step.commands).toEqual([
      { kind: 'trigger', checkpointId: 1, savepoint: false, timestamp: T0 + 4, final: true, savepointRequestId: undefined },
    ]);
    expect(step.coordinator.state.pendingSources).toEqual([]);
  });

  it('refuses a task outside the plan, and sources when none were given', () => {
    expect(() => start().sourceFinished({ vertex: 7, subtask: 0 }, T0)).toThrow(InternalError);
    const withoutSources = CheckpointCoordinator.start({ intervalMs: 100 }, { tasks: TASKS, maxParallelism: 128, now: T0 });
    expect(() => withoutSources.sourceFinished(SOURCE_0, T0)).toThrow(InternalError);
    expect(() => start({ sourceTasks: [SOURCE_0, SOURCE_0] })).toThrow(InternalError);
    expect(() => start({ sourceTasks: [{ vertex: 0, subtask: 2 }] })).toThrow(InternalError);
  });
});

describe('savepoints that do not stop the job', () => {
  it('are written to their own place and answered, and never notify the tasks', () => {
    const requested = start().triggerSavepoint(T0 + 1);
    expect(requested.commands).toMatchObject([{ kind: 'trigger', checkpointId: 1, savepoint: true, savepointRequestId: requested.requestId }]);
    const acked = ackAll(requested.coordinator, T0 + 2);
    expect(acked.commands).toMatchObject([{ kind: 'writeSavepoint', requestId: requested.requestId, stop: false, metadata: { checkpointId: 1, savepoint: true } }]);
    const done = acked.coordinator.metadataCommitted(1, T0 + 3);
    expect(done.commands).toEqual([{ kind: 'savepointComplete', requestId: requested.requestId, checkpointId: 1 }]);
    // The next checkpoint notifies as usual: its sinks commit what the savepoint covered too.
    let c = done.coordinator.tick(T0 + 200).coordinator;
    c = ackAll(c, T0 + 201).coordinator;
    expect(c.metadataCommitted(2, T0 + 202).commands).toEqual([{ kind: 'notifyComplete', checkpointId: 2, final: false }]);
  });

  it('answer a failed savepoint with savepointFailed after its abort', () => {
    const requested = start().triggerSavepoint(T0 + 1);
    const declined = requested.coordinator.decline(1, SINK, 'disk full', T0 + 2);
    expect(declined.outcome).toBe('aborted');
    expect(declined.commands).toEqual([
      { kind: 'abort', checkpointId: 1, reason: 'task 1/0 declined: disk full' },
      { kind: 'savepointFailed', requestId: requested.requestId, checkpointId: 1, reason: 'task 1/0 declined: disk full' },
    ]);
  });
});

describe('stop with a savepoint', () => {
  function stopWritten() {
    const requested = start().triggerSavepoint(T0 + 1, { stop: true });
    const acked = ackAll(requested.coordinator, T0 + 2);
    expect(acked.commands).toMatchObject([{ kind: 'writeSavepoint', stop: true, requestId: requested.requestId }]);
    return { requestId: requested.requestId, coordinator: acked.coordinator };
  }

  it('asks for prepareStop once the savepoint is durable, then notifies its completion and halts', () => {
    const { requestId, coordinator } = stopWritten();
    // Not durable yet: no halt, no notification.
    expect(kinds(coordinator.tick(T0 + 3).commands)).toEqual([]);
    const written = coordinator.metadataCommitted(1, T0 + 4);
    expect(written.commands).toEqual([{ kind: 'prepareStop', requestId, checkpointId: 1 }]);
    let c = written.coordinator;
    // While the stop is recorded nothing is triggered, and no other savepoint is taken.
    expect(c.nextWakeup(T0 + 10_000)).toBeUndefined();
    expect(c.tick(T0 + 10_000).commands).toEqual([]);
    const other = c.triggerSavepoint(T0 + 10_001);
    expect(other.commands).toMatchObject([{ kind: 'savepointRejected', requestId: other.requestId }]);
    c = other.coordinator;
    const prepared = c.stopPrepared(1, T0 + 10_002);
    expect(prepared.commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 1, final: false },
      { kind: 'halt', requestId, checkpointId: 1 },
    ]);
    c = prepared.coordinator;
    expect(c.status).toBe('halted');
    expect(c.nextWakeup(T0 + 20_000)).toBeUndefined();
    expect(c.tick(T0 + 20_000).commands).toEqual([]);
    expect(c.sourceFinished(SOURCE_0, T0 + 20_001).coordinator.sourceFinished(SOURCE_1, T0 + 20_002).commands).toEqual([]);
    expect(c.triggerSavepoint(T0 + 20_003).commands).toMatchObject([{ kind: 'savepointRejected', reason: 'the job was stopped with a savepoint' }]);
  });

  it('rejects savepoints queued behind the stop when it halts', () => {
    const requested = start().tick(T0 + 100).coordinator.triggerSavepoint(T0 + 101, { stop: true });
    const queued = requested.coordinator.triggerSavepoint(T0 + 102);
    let c = ackAll(queued.coordinator, T0 + 103).coordinator.metadataCommitted(1, T0 + 104).coordinator;
    c = ackAll(c, T0 + 105).coordinator;
    const written = c.metadataCommitted(2, T0 + 106);
    expect(kinds(written.commands)).toEqual(['prepareStop']);
    // The queued savepoint is not triggered while the stop is prepared, and rejected when it halts.
    expect(written.coordinator.state.queuedSavepoints).toEqual([queued.requestId]);
    expect(written.coordinator.stopPrepared(2, T0 + 107).commands).toEqual([
      { kind: 'notifyComplete', checkpointId: 2, final: false },
      { kind: 'savepointRejected', requestId: queued.requestId, reason: 'the job was stopped with a savepoint' },
      { kind: 'halt', requestId: requested.requestId, checkpointId: 2 },
    ]);
  });

  it('does not halt when writing the savepoint fails: the stop request fails and the job keeps running', () => {
    const { requestId, coordinator } = stopWritten();
    const failed = coordinator.abort(1, 'writing the metadata failed: EIO', T0 + 4);
    expect(kinds(failed.commands)).toEqual(['abort', 'savepointFailed']);
    expect(failed.commands[1]).toMatchObject({ requestId });
    const c = failed.coordinator;
    expect(c.status).toBe('running');
    expect(c.state.stopRequests).toEqual([]);
    expect(c.tick(T0 + 200).commands).toMatchObject([{ kind: 'trigger', checkpointId: 2, savepoint: false }]);
  });

  it('keeps running without notifying when recording the stop fails, then starts queued work', () => {
    const { requestId, coordinator } = stopWritten();
    let c = coordinator.metadataCommitted(1, T0 + 4).coordinator;
    c = c.sourceFinished(SOURCE_0, T0 + 5).coordinator.sourceFinished(SOURCE_1, T0 + 6).coordinator;
    const failed = c.stopFailed(1, 'disk full', T0 + 7);
    expect(failed.commands).toEqual([
      { kind: 'savepointNotStopped', requestId, checkpointId: 1, why: 'prepareFailed', reason: 'disk full' },
      { kind: 'trigger', checkpointId: 2, savepoint: false, timestamp: T0 + 7, final: true, savepointRequestId: undefined },
    ]);
    expect(failed.coordinator.status).toBe('running');
  });

  it('does not stop a job whose task failed before the stop was recorded', () => {
    const { requestId, coordinator } = stopWritten();
    // Failed while the metadata was written: the savepoint is valid, but the job restarts instead of stopping.
    const failedFirst = coordinator.taskFailed(SINK, 'boom', T0 + 3).coordinator.metadataCommitted(1, T0 + 4);
    expect(failedFirst.commands).toEqual([
      { kind: 'savepointNotStopped', requestId, checkpointId: 1, why: 'jobFailing', reason: 'the job is stopping after a task failure' },
    ]);
    // Failed while the stop was recorded.
    const preparing = coordinator.metadataCommitted(1, T0 + 4).coordinator.taskFailed(SINK, 'boom', T0 + 5).coordinator;
    expect(preparing.stopPrepared(1, T0 + 6).commands).toEqual([
      { kind: 'savepointNotStopped', requestId, checkpointId: 1, why: 'jobFailing', reason: 'the job is stopping after a task failure' },
    ]);
  });

  it('refuses a stop report it did not ask for', () => {
    expect(() => start().stopPrepared(1, T0)).toThrow(InternalError);
    const { coordinator } = stopWritten();
    expect(() => coordinator.metadataCommitted(1, T0 + 4).coordinator.stopFailed(2, 'x', T0 + 5)).toThrow(InternalError);
  });
});

describe('fencing', () => {
  const current = { attempt: 2, epoch: 5 };
  const stale = { attempt: 1, epoch: 4 };

  it('refuses acks and declines from an older epoch and changes nothing', () => {
    const c = start({ fencing: current }).tick(T0 + 100).coordinator;
    const ack = c.ack(1, handle(1, SINK), T0 + 101, stale);
    expect(ack.outcome).toBe('fenced');
    expect(ack.refused).toEqual({ current, offered: stale });
    expect(ack.commands).toEqual([]);
    expect(ack.coordinator.state).toBe(c.state);
    const decline = c.decline(1, SINK, 'zombie', T0 + 102, stale);
    expect(decline.outcome).toBe('fenced');
    expect(decline.refused).toEqual({ current, offered: stale });
    expect(decline.coordinator.inFlight?.checkpointId).toBe(1);
    expect(decline.commands).toEqual([]);
  });

  it('accepts the current epoch (and a link without a token) and records the token in the metadata', () => {
    let c = start({ fencing: current }).tick(T0 + 100).coordinator;
    expect(c.ack(1, handle(1, SOURCE_0), T0 + 101, current).outcome).toBe('accepted');
    c = c.ack(1, handle(1, SOURCE_0), T0 + 101, current).coordinator;
    c = c.ack(1, handle(1, SOURCE_1), T0 + 102).coordinator;
    const last = c.ack(1, handle(1, SINK), T0 + 103, { attempt: 2, epoch: 5 });
    expect(last.commands).toMatchObject([{ kind: 'commitMetadata', metadata: { checkpointId: 1, fencing: current } }]);
    expect(c.decline(1, SINK, 'failed', T0 + 104, current).outcome).toBe('aborted');
  });

  it('records no token when it was given none', () => {
    const c = ackAll(start().tick(T0 + 100).coordinator, T0 + 101);
    const command = c.commands[0];
    expect(command?.kind === 'commitMetadata' && 'fencing' in command.metadata).toBe(false);
  });
});
