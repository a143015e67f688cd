import { InternalError } from '../core/index.ts';
import type { FencingToken } from '../core/fencing.ts';
import { compileCoordinatorOptions } from './coordinator-options.ts';
import type { CheckpointCoordinatorOptions, CompiledCoordinatorOptions } from './coordinator-options.ts';
import type {
  AckOutcome,
  CheckpointHistoryEntry,
  DeclineOutcome,
  FencingRefusal,
  CoordinatorCommand,
  CoordinatorState,
  InFlightCheckpoint,
} from './coordinator-protocol.ts';
import { compareTaskIds, describeTask, sameTask } from './task-ids.ts';
import { checkSources, type Draft, expire, fail, nextPeriodicAt, notRunningReason, notStopped, type Out, planParallelism, refusal, rejectQueued, requestFinal, retryAt, savepointCompleted, startCommit, startQueued, takeStopping, trigger, updateHistory, without } from './coordinator-transitions.ts';
import type { OperatorStateRecord, TaskId, TaskStateHandle } from './types.ts';

/**
 * The checkpoint coordinator as a pure state machine: every input is an event with the current time, every method
 * returns the next coordinator and the commands a driver must carry out, in order. No timers: the driver calls
 * `tick` at `nextWakeup`. Every input first expires an in-flight checkpoint past its timeout, so the outcome does
 * not depend on how punctually the driver ticks.
 *
 * At most one checkpoint is in flight. Periodic checkpoints are triggered `intervalMs` after the previous trigger
 * and at least `minPauseMs` after the previous checkpoint ended. Savepoints are never skipped: one requested while
 * a checkpoint is in flight is queued and triggered as soon as it ends. When every source has finished, the final
 * checkpoint is triggered at once (or as soon as the in-flight one and queued savepoints are done), retried if it
 * fails, and no checkpoint follows it.
 *
 * A failed final checkpoint is retried after a backoff that doubles with each consecutive failure; one failure
 * more than `tolerableFailures` in a row emits `failJob` and stops the coordinator, so failing storage ends the job
 * instead of being retried forever.
 *
 * Every protocol decision lives here, so that each driver (embedded, Step Functions) only carries out commands:
 * which completions reach the tasks (`notifyComplete` only for checkpoints and a stop's savepoint), counting finished
 * sources (`sourceFinished`), where a savepoint goes (`writeSavepoint`), the order of a stop (`prepareStop`, then
 * `notifyComplete`, then `halt`) and refusing acks and declines of a stale attempt (fencing).
 */
export interface CoordinatorInit {
  /** Every task of the physical plan; for each vertex, subtasks 0..parallelism-1. */
  readonly tasks: readonly TaskId[];
  readonly maxParallelism: number;
  /** Epoch ms; the first periodic checkpoint is triggered `intervalMs` later. */
  readonly now: number;
  /**
   * The checkpoint restored from, or the highest id an earlier attempt of this run used (its coordinator's
   * `lastCheckpointId`): new ids start after it, so an aborted checkpoint's leftovers never share an id. @default 0
   */
  readonly lastCheckpointId?: number;
  /** Complete checkpoints already in storage, which retention counts (and discards once newer ones complete). */
  readonly retainedCheckpointIds?: readonly number[];
  /** History of an earlier attempt of the same run (its `state.history`, oldest first), kept for the REST API. */
  readonly history?: readonly CheckpointHistoryEntry[];
  /** What each operator's state means; written into every checkpoint's metadata. @default not recorded */
  readonly operators?: readonly OperatorStateRecord[];
  /**
   * The source tasks of the plan: once each has reported `sourceFinished`, the final checkpoint is taken.
   * @default not known: only `allSourcesFinished` requests the final checkpoint
   */
  readonly sourceTasks?: readonly TaskId[];
  /** The token of the attempt this coordinator serves. @default none: nothing is fenced, metadata records none */
  readonly fencing?: FencingToken;
}

export interface CoordinatorStep {
  readonly coordinator: CheckpointCoordinator;
  readonly commands: readonly CoordinatorCommand[];
}

export interface AckStep extends CoordinatorStep, FencedStep {
  readonly outcome: AckOutcome;
}

export interface FencedStep {
  /** Set when the event came from an older epoch and was ignored. */
  readonly refused?: FencingRefusal;
}

export interface DeclineStep extends CoordinatorStep, FencedStep {
  readonly outcome: DeclineOutcome;
}

export interface AbortStep extends CoordinatorStep {
  /** `ignored` when the checkpoint is not the one in flight (already ended, or never triggered). */
  readonly outcome: 'aborted' | 'ignored';
}

export interface SavepointStep extends CoordinatorStep {
  /** Answered by the trigger command carrying this `savepointRequestId`, or by a `savepointRejected` command. */
  readonly requestId: number;
}


export class CheckpointCoordinator {
  private constructor(
    readonly options: CompiledCoordinatorOptions,
    /** Plain data: store it and `resume` from it in a stateless driver. */
    readonly state: CoordinatorState,
  ) {}

  /** Validates the options (ConfigError) and the plan (InternalError) once. */
  static start(options: CheckpointCoordinatorOptions, init: CoordinatorInit): CheckpointCoordinator {
    const compiled = compileCoordinatorOptions(options);
    const parallelism = planParallelism(init.tasks);
    if (!Number.isSafeInteger(init.maxParallelism) || init.maxParallelism < 1) {
      throw new InternalError(`maxParallelism must be a positive integer, got ${String(init.maxParallelism)}`);
    }
    const retained = [...new Set(init.retainedCheckpointIds ?? [])].sort((a, b) => a - b);
    const history = (init.history ?? []).slice(-compiled.historySize);
    const lastCheckpointId = Math.max(init.lastCheckpointId ?? 0, ...retained, ...history.map((h) => h.checkpointId));
    for (const id of [lastCheckpointId, ...retained]) {
      if (!Number.isSafeInteger(id) || id < 0) throw new InternalError(`checkpoint ids must be non-negative integers, got ${id}`);
    }
    return new CheckpointCoordinator(compiled, {
      status: 'running',
      maxParallelism: init.maxParallelism,
      parallelism,
      expectedTasks: [...init.tasks].sort(compareTaskIds),
      finishedTasks: [],
      lastCheckpointId,
      lastTriggerAt: init.now,
      lastEndedAt: undefined,
      consecutiveFailures: 0,
      inFlight: undefined,
      queuedSavepoints: [],
      nextSavepointRequestId: 1,
      finalRequested: false,
      retained,
      history,
      ...(init.operators === undefined ? {} : { operators: init.operators }),
      ...(init.sourceTasks === undefined ? {} : { pendingSources: checkSources(init.sourceTasks, parallelism) }),
      stopRequests: [],
      ...(init.fencing === undefined ? {} : { fencing: { attempt: init.fencing.attempt, epoch: init.fencing.epoch } }),
    });
  }

  /** Continues from a state an earlier step returned (e.g. read back by a Lambda). */
  static resume(options: CompiledCoordinatorOptions, state: CoordinatorState): CheckpointCoordinator {
    return new CheckpointCoordinator(options, state);
  }

  get status(): CoordinatorState['status'] {
    return this.state.status;
  }

  get inFlight(): InFlightCheckpoint | undefined {
    return this.state.inFlight;
  }

  /** The highest id triggered so far; pass it as `lastCheckpointId` to the coordinator of the next attempt. */
  get lastCheckpointId(): number {
    return this.state.lastCheckpointId;
  }

  get retainedCheckpointIds(): readonly number[] {
    return this.state.retained;
  }

  /** Newest first. */
  history(): CheckpointHistoryEntry[] {
    return this.state.history.slice().reverse();
  }

  /**
   * When the driver should call `tick` next (epoch ms, never before `now`); undefined when nothing is due until
   * another event arrives (metadata commit pending, coordinator stopped or finished).
   */
  nextWakeup(now: number): number | undefined {
    const s = this.state;
    if (s.inFlight !== undefined) {
      return s.inFlight.phase === 'acknowledging' ? Math.max(now, s.inFlight.triggeredAt + this.options.timeoutMs) : undefined;
    }
    if (s.status !== 'running' || s.stopping !== undefined) return undefined;
    if (s.queuedSavepoints.length > 0) return now;
    if (s.finalRequested) return Math.max(now, retryAt(this.options, s));
    return Math.max(now, nextPeriodicAt(this.options, s));
  }

  /** Expires a checkpoint past its timeout; triggers a periodic checkpoint when one is due. */
  tick(now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      if (d.status !== 'running' || d.inFlight !== undefined || d.stopping !== undefined) return;
      if (d.finalRequested || d.queuedSavepoints.length > 0) startQueued(this.options, d, now, out);
      else if (now >= nextPeriodicAt(this.options, d)) trigger(this.options, d, now, out, false, false, undefined);
    }).step;
  }

  /**
   * Triggers a savepoint now, or as soon as the in-flight checkpoint ends; rejected once stopped or finished. With
   * `stop`, the job stops with it: once it is written, `prepareStop`, then (on `stopPrepared`) its `notifyComplete`
   * and `halt`.
   */
  triggerSavepoint(now: number, options: { readonly stop?: boolean } = {}): SavepointStep {
    const { step, result } = this.run(now, (d, out) => {
      const requestId = d.nextSavepointRequestId;
      d.nextSavepointRequestId = requestId + 1;
      if (d.status !== 'running' || d.stopping !== undefined) {
        out.push({ kind: 'savepointRejected', requestId, reason: notRunningReason(d.stopping === undefined ? d.status : 'halted') });
      } else {
        if (options.stop === true) d.stopRequests = [...(d.stopRequests ?? []), requestId];
        d.queuedSavepoints = [...d.queuedSavepoints, requestId];
        startQueued(this.options, d, now, out);
      }
      return requestId;
    });
    return { ...step, requestId: result };
  }

  /**
   * A task wrote its state for `checkpointId`. Once every expected task has, the metadata is committed. `token` is
   * the sender's fencing token: one older than the coordinator's is refused (outcome `fenced`, nothing changes).
   * Without a token nothing is checked (a link within the attempt's own process, which cannot be stale).
   */
  ack(checkpointId: number, handle: TaskStateHandle, now: number, token?: FencingToken): AckStep {
    const refused = refusal(this.state, token);
    if (refused !== undefined) return { coordinator: this, commands: [], outcome: 'fenced', refused };
    const { step, result } = this.run(now, (d, out): AckOutcome => {
      const f = d.inFlight;
      if (f === undefined || f.checkpointId !== checkpointId) return checkpointId > d.lastCheckpointId ? 'unknown' : 'late';
      if (f.acknowledged.some((h) => sameTask(h.task, handle.task))) return 'duplicate';
      const index = f.waitingFor.findIndex((t) => sameTask(t, handle.task));
      if (index < 0) return 'unexpectedTask';
      d.inFlight = { ...f, waitingFor: without(f.waitingFor, index), acknowledged: [...f.acknowledged, handle] };
      d.history = updateHistory(d.history, checkpointId, (e) => ({
        ...e,
        bytes: e.bytes + handle.bytes,
        acknowledgedTasks: e.acknowledgedTasks + 1,
      }));
      if (d.inFlight.waitingFor.length === 0) startCommit(d, now, out);
      return 'accepted';
    });
    return { ...step, outcome: result };
  }

  /**
   * A task declined `checkpointId` (its snapshot failed, or a newer barrier subsumed it): aborted if it is in
   * flight. Fenced as `ack`: a stale attempt's decline must not abort the live attempt's checkpoint.
   */
  decline(checkpointId: number, task: TaskId, reason: string, now: number, token?: FencingToken): DeclineStep {
    const refused = refusal(this.state, token);
    if (refused !== undefined) return { coordinator: this, commands: [], outcome: 'fenced', refused };
    return this.abort(checkpointId, `task ${task.vertex}/${task.subtask} declined: ${reason}`, now);
  }

  /** Aborts `checkpointId` if it is in flight: the driver's metadata or savepoint write failed. */
  abort(checkpointId: number, reason: string, now: number): AbortStep {
    const { step, result } = this.run(now, (d, out) => {
      if (d.inFlight?.checkpointId !== checkpointId) return 'ignored' as const;
      fail(this.options, d, now, out, reason);
      startQueued(this.options, d, now, out);
      return 'aborted' as const;
    });
    return { ...step, outcome: result };
  }

  /**
   * A task failed: the job restarts (with a new coordinator) or fails. A checkpoint still waiting for acks is
   * aborted, queued savepoints are rejected and nothing is triggered any more. A checkpoint whose metadata is being
   * committed is left to finish: every task acknowledged it, so it is valid, and the restart may restore it.
   */
  taskFailed(task: TaskId, reason: string, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      if (d.status !== 'running') return;
      d.status = 'stopped';
      const why = `${describeTask(task)} failed: ${reason}`;
      if (d.inFlight?.phase === 'acknowledging') fail(this.options, d, now, out, why);
      rejectQueued(d, out, `the savepoint was not triggered because ${why}`);
    }).step;
  }

  /**
   * A task finished for good (all its input read and emitted). Later checkpoints do not wait for it; one in
   * flight that it has not acknowledged completes without it, recording it in the metadata's `finishedTasks`.
   */
  taskFinished(task: TaskId, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      const index = d.expectedTasks.findIndex((t) => sameTask(t, task));
      if (index < 0) {
        if (d.finishedTasks.some((t) => sameTask(t, task))) return;
        throw new InternalError(`${describeTask(task)} finished, but it is not a task of the plan`);
      }
      d.expectedTasks = without(d.expectedTasks, index);
      d.finishedTasks = [...d.finishedTasks, task].sort(compareTaskIds);
      const f = d.inFlight;
      if (f?.phase !== 'acknowledging') return;
      const waiting = f.waitingFor.findIndex((t) => sameTask(t, task));
      if (waiting < 0) return;
      d.inFlight = { ...f, waitingFor: without(f.waitingFor, waiting) };
      d.history = updateHistory(d.history, f.checkpointId, (e) => ({ ...e, totalTasks: e.totalTasks - 1 }));
      if (d.inFlight.waitingFor.length === 0) startCommit(d, now, out);
    }).step;
  }

  /**
   * A source task read all its input. Once every source task of the plan has (counted once each), the final
   * checkpoint is requested as by `allSourcesFinished`.
   */
  sourceFinished(task: TaskId, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      const pending = d.pendingSources;
      if (pending === undefined) throw new InternalError(`${describeTask(task)} reported its source finished, but the coordinator was given no source tasks`);
      const index = pending.findIndex((t) => sameTask(t, task));
      if (index < 0) {
        if (this.isTask(task)) return;
        throw new InternalError(`${describeTask(task)} reported its source finished, but it is not a task of the plan`);
      }
      d.pendingSources = without(pending, index);
      if (d.pendingSources.length === 0) requestFinal(this.options, d, now, out);
    }).step;
  }

  /** Every source read all its input: take the final checkpoint at once, even inside the interval. */
  allSourcesFinished(now: number): CoordinatorStep {
    return this.run(now, (d, out) => requestFinal(this.options, d, now, out)).step;
  }

  /**
   * The driver recorded the stop (`prepareStop`): the savepoint's completion goes to the tasks, then `halt`. If a
   * task failed meanwhile, the job is not stopped (`savepointNotStopped`).
   */
  stopPrepared(checkpointId: number, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      const stopping = takeStopping(d, checkpointId, 'prepared');
      if (d.status !== 'running') {
        out.push(notStopped(stopping, 'jobFailing', notRunningReason(d.status)));
        return;
      }
      out.push({ kind: 'notifyComplete', checkpointId, final: false });
      d.status = 'halted';
      rejectQueued(d, out, notRunningReason('halted'));
      out.push({ kind: 'halt', requestId: stopping.requestId, checkpointId });
    }).step;
  }

  /** Recording the stop failed: the savepoint stays valid, the job keeps running, queued work starts. */
  stopFailed(checkpointId: number, reason: string, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      const stopping = takeStopping(d, checkpointId, 'failed');
      out.push(notStopped(stopping, 'prepareFailed', reason));
      startQueued(this.options, d, now, out);
    }).step;
  }

  private isTask(task: TaskId): boolean {
    const p = this.state.parallelism[task.vertex];
    return p !== undefined && Number.isSafeInteger(task.subtask) && task.subtask >= 0 && task.subtask < p;
  }

  /**
   * The driver committed the metadata of `checkpointId`: it is complete. Tasks are notified (unless the
   * coordinator stopped after a task failure), old checkpoints beyond `retain` are discarded, and queued work
   * starts. Committing anything but the checkpoint awaiting its commit is a driver bug.
   */
  metadataCommitted(checkpointId: number, now: number): CoordinatorStep {
    return this.run(now, (d, out) => {
      const f = d.inFlight;
      if (f === undefined || f.checkpointId !== checkpointId || f.phase !== 'committing') {
        const actual = f === undefined ? 'no checkpoint is in flight' : `checkpoint ${f.checkpointId} is ${f.phase}`;
        throw new InternalError(`metadata of checkpoint ${checkpointId} reported committed, but ${actual}`);
      }
      d.inFlight = undefined;
      d.lastEndedAt = now;
      d.consecutiveFailures = 0;
      d.history = updateHistory(d.history, checkpointId, (e) => ({ ...e, status: 'completed', durationMs: now - f.triggeredAt }));
      if (f.savepoint) {
        if (savepointCompleted(d, f, out)) return;
      } else {
        if (d.status === 'running') out.push({ kind: 'notifyComplete', checkpointId, final: f.final });
        const retained = [...d.retained, checkpointId];
        const excess = retained.length - this.options.retain;
        d.retained = excess > 0 ? retained.slice(excess) : retained;
        if (excess > 0) out.push({ kind: 'discard', checkpointIds: retained.slice(0, excess) });
      }
      if (f.final && d.status === 'running') {
        d.status = 'finished';
        rejectQueued(d, out, notRunningReason('finished'));
      }
      startQueued(this.options, d, now, out);
    }).step;
  }

  private run<R>(now: number, body: (d: Draft, out: Out) => R): { step: CoordinatorStep; result: R } {
    const d: Draft = { ...this.state };
    const out: Out = [];
    expire(this.options, d, now, out);
    const result = body(d, out);
    return { step: { coordinator: new CheckpointCoordinator(this.options, d), commands: out }, result };
  }
}

/** Parallelism by vertex; each vertex must list subtasks 0..p-1 exactly once. */
export { backoffAfterFailures } from './coordinator-transitions.ts';
