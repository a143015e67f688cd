import { InternalError } from '../core/index.ts';
import type { FencingToken } from '../core/fencing.ts';
import type { CompiledCoordinatorOptions } from './coordinator-options.ts';
import type {
  CheckpointHistoryEntry,
  FencingRefusal,
  CoordinatorCommand,
  CoordinatorState,
  InFlightCheckpoint,
} from './coordinator-protocol.ts';
import { compareTaskIds, describeTask, sameTask } from './task-ids.ts';
import { CHECKPOINT_FORMAT_VERSION } from './types.ts';
import type { CheckpointMetadata, TaskId } from './types.ts';

/**
 * The coordinator's transitions: pure functions that change a draft of its JSON state and append the commands a
 * driver must carry out. CheckpointCoordinator (coordinator.ts) is the event API over them.
 */
export type Draft = { -readonly [K in keyof CoordinatorState]: CoordinatorState[K] };
export type Out = CoordinatorCommand[];

export function planParallelism(tasks: readonly TaskId[]): Record<number, number> {
  const subtasks = new Map<number, Set<number>>();
  for (const t of tasks) {
    if (!Number.isSafeInteger(t.vertex) || t.vertex < 0 || !Number.isSafeInteger(t.subtask) || t.subtask < 0) {
      throw new InternalError(`invalid task id ${JSON.stringify(t)} in the checkpoint plan`);
    }
    const set = subtasks.get(t.vertex) ?? new Set<number>();
    if (set.has(t.subtask)) throw new InternalError(`${describeTask(t)} is listed twice in the checkpoint plan`);
    subtasks.set(t.vertex, set.add(t.subtask));
  }
  if (subtasks.size === 0) throw new InternalError('the checkpoint plan has no tasks');
  const parallelism: Record<number, number> = {};
  for (const [vertex, set] of subtasks) {
    for (let s = 0; s < set.size; s++) {
      if (!set.has(s)) throw new InternalError(`vertex ${vertex} of the checkpoint plan has ${set.size} subtasks but lacks subtask ${s}`);
    }
    parallelism[vertex] = set.size;
  }
  return parallelism;
}

export function nextPeriodicAt(options: CompiledCoordinatorOptions, s: CoordinatorState): number {
  const afterPause = s.lastEndedAt === undefined ? Number.NEGATIVE_INFINITY : s.lastEndedAt + options.minPauseMs;
  return Math.max(s.lastTriggerAt + options.intervalMs, afterPause);
}

/** After `n` consecutive failures: `failureBackoffMs * 2^(n-1)`, at most `maxFailureBackoffMs`. */
export function backoffAfterFailures(options: CompiledCoordinatorOptions, failures: number): number {
  if (failures <= 0) return 0;
  // Capped exponent: 2^(n-1) overflows to Infinity for large n, and Infinity * 0 would be NaN.
  return Math.min(options.maxFailureBackoffMs, options.failureBackoffMs * 2 ** Math.min(failures - 1, 52));
}

/**
 * Earliest retry of the final checkpoint after failures; -Infinity when the last checkpoint did not fail. Periodic
 * checkpoints keep to their interval (as in Flink): only the final one, which has no interval, needs the backoff.
 */
export function retryAt(options: CompiledCoordinatorOptions, s: CoordinatorState): number {
  const failures = s.consecutiveFailures ?? 0;
  if (failures === 0 || s.lastEndedAt === undefined) return Number.NEGATIVE_INFINITY;
  return s.lastEndedAt + backoffAfterFailures(options, failures);
}

export function notRunningReason(status: CoordinatorState['status']): string {
  if (status === 'halted') return 'the job was stopped with a savepoint';
  return status === 'finished' ? 'the job finished' : 'the job is stopping after a task failure';
}

/** The refusal of an event whose sender's epoch is older than the coordinator's (the shared rule of assertNotFenced). */
export function refusal(s: CoordinatorState, offered: FencingToken | undefined): FencingRefusal | undefined {
  const current = s.fencing;
  if (current === undefined || offered === undefined || offered.epoch >= current.epoch) return undefined;
  return { current, offered: { attempt: offered.attempt, epoch: offered.epoch } };
}

/** Source tasks must be tasks of the plan, each listed once; sorted for a stable state. */
export function checkSources(sources: readonly TaskId[], parallelism: Readonly<Record<number, number>>): TaskId[] {
  const sorted = [...sources].sort(compareTaskIds);
  sorted.forEach((t, i) => {
    const p = parallelism[t.vertex];
    if (p === undefined || !Number.isSafeInteger(t.subtask) || t.subtask < 0 || t.subtask >= p) {
      throw new InternalError(`source ${describeTask(t)} is not a task of the checkpoint plan`);
    }
    const previous = sorted[i - 1];
    if (previous !== undefined && sameTask(previous, t)) throw new InternalError(`source ${describeTask(t)} is listed twice`);
  });
  return sorted.map((t) => ({ vertex: t.vertex, subtask: t.subtask }));
}

export function requestFinal(options: CompiledCoordinatorOptions, d: Draft, now: number, out: Out): void {
  if (d.status !== 'running' || d.finalRequested) return;
  d.finalRequested = true;
  startQueued(options, d, now, out);
}

/**
 * A savepoint's files are written. A savepoint that does not stop the job answers its request and notifies no task.
 * The savepoint of a stop asks the driver to record the stop and waits (returns true: nothing else starts), unless
 * a task failed first: then the job is not stopped with it.
 */
export function savepointCompleted(d: Draft, f: InFlightCheckpoint, out: Out): boolean {
  const requestId = f.savepointRequestId;
  if (requestId === undefined) throw new InternalError(`savepoint ${f.checkpointId} answers no savepoint request`);
  const stop = (d.stopRequests ?? []).includes(requestId);
  d.stopRequests = (d.stopRequests ?? []).filter((r) => r !== requestId);
  if (!stop) {
    out.push({ kind: 'savepointComplete', requestId, checkpointId: f.checkpointId });
    return false;
  }
  if (d.status !== 'running') {
    out.push(notStopped({ requestId, checkpointId: f.checkpointId }, 'jobFailing', notRunningReason(d.status)));
    return false;
  }
  d.stopping = { requestId, checkpointId: f.checkpointId };
  out.push({ kind: 'prepareStop', requestId, checkpointId: f.checkpointId });
  return true;
}

export function takeStopping(d: Draft, checkpointId: number, what: string): { requestId: number; checkpointId: number } {
  const stopping = d.stopping;
  if (stopping?.checkpointId !== checkpointId) {
    const actual = stopping === undefined ? 'no stop is being prepared' : `the stop of savepoint ${stopping.checkpointId} is`;
    throw new InternalError(`the stop of savepoint ${checkpointId} reported ${what}, but ${actual}`);
  }
  delete d.stopping;
  return stopping;
}

export function notStopped(
  stopping: { requestId: number; checkpointId: number },
  why: 'jobFailing' | 'prepareFailed',
  reason: string,
): CoordinatorCommand {
  return { kind: 'savepointNotStopped', requestId: stopping.requestId, checkpointId: stopping.checkpointId, why, reason };
}

export function without<T>(items: readonly T[], index: number): T[] {
  return [...items.slice(0, index), ...items.slice(index + 1)];
}

export function updateHistory(
  history: readonly CheckpointHistoryEntry[],
  checkpointId: number,
  change: (entry: CheckpointHistoryEntry) => CheckpointHistoryEntry,
): CheckpointHistoryEntry[] {
  return history.map((e) => (e.checkpointId === checkpointId ? change(e) : e));
}

export function expire(options: CompiledCoordinatorOptions, d: Draft, now: number, out: Out): void {
  const f = d.inFlight;
  if (f?.phase !== 'acknowledging' || now < f.triggeredAt + options.timeoutMs) return;
  const first = f.waitingFor[0];
  const example = first === undefined ? '' : `, among them ${describeTask(first)}`;
  fail(options, d, now, out, `checkpoint ${f.checkpointId} expired after ${options.timeoutMs} ms waiting for ${f.waitingFor.length} task(s)${example}`);
  startQueued(options, d, now, out);
}

/**
 * Aborts the in-flight checkpoint. While running, a failed checkpoint (not a savepoint) counts towards
 * `tolerableFailures`; one too many stops the coordinator and fails the job.
 */
export function fail(options: CompiledCoordinatorOptions, d: Draft, now: number, out: Out, reason: string): void {
  const f = d.inFlight;
  if (f === undefined) throw new InternalError('no checkpoint in flight to abort');
  out.push({ kind: 'abort', checkpointId: f.checkpointId, reason });
  if (f.savepoint && f.savepointRequestId !== undefined) {
    const requestId = f.savepointRequestId;
    d.stopRequests = (d.stopRequests ?? []).filter((r) => r !== requestId);
    out.push({ kind: 'savepointFailed', requestId, checkpointId: f.checkpointId, reason });
  }
  if (!f.savepoint && d.status === 'running') {
    const failures = (d.consecutiveFailures ?? 0) + 1;
    d.consecutiveFailures = failures;
    if (failures > options.tolerableFailures) {
      out.push({ kind: 'failJob', failures, tolerated: options.tolerableFailures, checkpointId: f.checkpointId, reason });
      d.status = 'stopped';
      rejectQueued(d, out, `the savepoint was not triggered because ${failures} checkpoints failed in a row`);
    }
  }
  d.history = updateHistory(d.history, f.checkpointId, (e) => ({
    ...e,
    status: 'failed',
    durationMs: now - f.triggeredAt,
    failureReason: reason,
  }));
  d.inFlight = undefined;
  d.lastEndedAt = now;
}

export function rejectQueued(d: Draft, out: Out, reason: string): void {
  for (const requestId of d.queuedSavepoints) out.push({ kind: 'savepointRejected', requestId, reason });
  d.stopRequests = (d.stopRequests ?? []).filter((r) => !d.queuedSavepoints.includes(r));
  d.queuedSavepoints = [];
}

/**
 * Savepoints first, in request order, then the final checkpoint. A savepoint waits for nothing but the in-flight
 * checkpoint; the final checkpoint also waits out the backoff after a failure.
 */
export function startQueued(options: CompiledCoordinatorOptions, d: Draft, now: number, out: Out): void {
  if (d.inFlight !== undefined || d.status !== 'running' || d.stopping !== undefined) return;
  const [requestId, ...rest] = d.queuedSavepoints;
  if (requestId !== undefined) {
    d.queuedSavepoints = rest;
    trigger(options, d, now, out, true, false, requestId);
  } else if (d.finalRequested && now >= retryAt(options, d)) {
    trigger(options, d, now, out, false, true, undefined);
  }
}

export function trigger(
  options: CompiledCoordinatorOptions,
  d: Draft,
  now: number,
  out: Out,
  savepoint: boolean,
  final: boolean,
  savepointRequestId: number | undefined,
): void {
  const checkpointId = d.lastCheckpointId + 1;
  d.lastCheckpointId = checkpointId;
  d.lastTriggerAt = now;
  d.inFlight = {
    checkpointId,
    savepoint,
    final,
    savepointRequestId,
    triggeredAt: now,
    phase: 'acknowledging',
    waitingFor: d.expectedTasks,
    acknowledged: [],
  };
  const entry: CheckpointHistoryEntry = {
    checkpointId,
    status: 'in-progress',
    savepoint,
    final,
    triggeredAt: now,
    durationMs: undefined,
    bytes: 0,
    acknowledgedTasks: 0,
    totalTasks: d.expectedTasks.length,
    failureReason: undefined,
  };
  d.history = [...d.history, entry].slice(-options.historySize);
  out.push({ kind: 'trigger', checkpointId, savepoint, timestamp: now, final, savepointRequestId });
  // With every task finished there is nothing to wait for.
  if (d.expectedTasks.length === 0) startCommit(d, now, out);
}

export function startCommit(d: Draft, now: number, out: Out): void {
  const f = d.inFlight;
  if (f === undefined) throw new InternalError('no checkpoint in flight to commit');
  d.inFlight = { ...f, phase: 'committing' };
  const tasks = f.acknowledged.slice().sort((a, b) => compareTaskIds(a.task, b.task));
  const finishedTasks = d.finishedTasks.filter((t) => !tasks.some((h) => sameTask(h.task, t)));
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: f.checkpointId,
    savepoint: f.savepoint,
    triggeredAt: f.triggeredAt,
    completedAt: now,
    maxParallelism: d.maxParallelism,
    parallelism: d.parallelism,
    tasks,
    ...(finishedTasks.length > 0 ? { finishedTasks } : {}),
    ...(d.operators === undefined ? {} : { operators: d.operators }),
    ...(d.fencing === undefined ? {} : { fencing: d.fencing }),
  };
  if (f.savepoint && f.savepointRequestId !== undefined) {
    const stop = (d.stopRequests ?? []).includes(f.savepointRequestId);
    out.push({ kind: 'writeSavepoint', metadata, requestId: f.savepointRequestId, stop });
  } else {
    out.push({ kind: 'commitMetadata', metadata });
  }
}
