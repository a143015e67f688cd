import { randomUUID } from 'node:crypto';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { CheckpointDriver } from '../checkpoint-driver/checkpoint-driver.ts';
import { JobNotRunningError } from '../control/control-errors.ts';
import type { CheckpointView, JobControl, JobDetails, JobOverview, JobStatus, SavepointView } from '../control/job-control.ts';
import type { TaskMetrics } from '../task-metrics.ts';

/** One attempt of a threaded job, as its controls see it. */
export interface AttemptHandle {
  /** Undefined without checkpointing. */
  readonly driver: CheckpointDriver | undefined;
  /** Resolves once every thread ran the completion hooks (sink commits) of `checkpointId`; rejects if the attempt ends first. */
  notified(checkpointId: number): Promise<void>;
  /** Every task's counters now (threads that do not answer promptly: their last known counters). */
  metrics(): Promise<TaskMetrics[]>;
  /** Ends the attempt at once (worker threads are terminated); it returns `metrics` and the savepoint. */
  stop(savepoint: SavepointView, metrics: TaskMetrics[]): void;
}

export interface ThreadedJobInfo {
  readonly name: string;
  readonly plan: PhysicalPlan;
  readonly parallelism: number;
  /** Worker threads that run the job's subtasks. */
  readonly workerThreads: number;
  readonly startTime: number;
  readonly checkpointing: JobDetails['checkpointing'];
}

function recordsRead(metrics: readonly TaskMetrics[]): number {
  let n = 0;
  for (const t of metrics) if (t.source) n += t.recordsOut;
  return n;
}

function droppedLateRecords(metrics: readonly TaskMetrics[]): number {
  let n = 0;
  for (const t of metrics) n += t.droppedLateRecords;
  return n;
}

/**
 * The controls of a job run by `runOnThreads`: its status across attempts, and savepoints and stop through the
 * current attempt's checkpoint driver. The runner reports each attempt's start and end.
 */
export class ThreadedJob implements JobControl {
  readonly id = randomUUID();
  private status: JobStatus = 'running';
  private attempt: AttemptHandle | undefined;
  /** The latest attempt's driver, kept after the attempt for its checkpoint history. */
  private driver: CheckpointDriver | undefined;
  private attempts = 0;
  private restoredFrom: string | null = null;
  private savepointPath: string | null = null;
  private lastMetrics: TaskMetrics[] = [];

  constructor(private readonly info: ThreadedJobInfo) {}

  attemptStarted(attempt: AttemptHandle, restoredFrom: string | undefined): void {
    this.attempts++;
    this.attempt = attempt;
    this.driver = attempt.driver ?? this.driver;
    this.restoredFrom = restoredFrom ?? null;
    this.lastMetrics = [];
    this.status = 'running';
  }

  /** The attempt failed; the restart strategy decides whether another one follows. */
  attemptFailed(): void {
    this.attempt = undefined;
    this.status = 'restarting';
  }

  /** No attempt follows. */
  failed(): void {
    this.attempt = undefined;
    this.status = 'failed';
  }

  ended(metrics: readonly TaskMetrics[], savepoint: SavepointView | undefined): void {
    this.attempt = undefined;
    this.lastMetrics = [...metrics];
    this.status = savepoint === undefined ? 'finished' : 'stopped';
    if (savepoint !== undefined) this.savepointPath = savepoint.path;
  }

  overview(): JobOverview {
    return { id: this.id, name: this.info.name, status: this.status };
  }

  async details(): Promise<JobDetails> {
    const attempt = this.attempt;
    if (attempt !== undefined) this.lastMetrics = await attempt.metrics();
    const { plan } = this.info;
    return {
      ...this.overview(),
      startTime: this.info.startTime,
      durationMs: Date.now() - this.info.startTime,
      parallelism: this.info.parallelism,
      workerThreads: this.info.workerThreads,
      maxParallelism: plan.maxParallelism,
      vertices: plan.vertices.map((v) => ({ id: v.id, name: v.name, parallelism: v.parallelism })),
      recordsRead: recordsRead(this.lastMetrics),
      droppedLateRecords: droppedLateRecords(this.lastMetrics),
      restarts: Math.max(0, this.attempts - 1),
      checkpointing: this.info.checkpointing,
      restoredFrom: this.restoredFrom,
      savepointPath: this.savepointPath,
    };
  }

  checkpoints(): CheckpointView[] {
    return (this.driver?.history() ?? []).map((e) => ({
      id: e.checkpointId,
      status: e.status,
      savepoint: e.savepoint,
      final: e.final,
      triggerTime: e.triggeredAt,
      durationMs: e.durationMs ?? null,
      sizeBytes: e.bytes,
      acknowledgedTasks: e.acknowledgedTasks,
      totalTasks: e.totalTasks,
      failureReason: e.failureReason ?? null,
      path: e.path ?? null,
    }));
  }

  triggerSavepoint(): Promise<SavepointView> {
    try {
      return this.runningDriver('take a savepoint').triggerSavepoint();
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  async stopWithSavepoint(): Promise<SavepointView> {
    const driver = this.runningDriver('stop the job with a savepoint');
    const attempt = this.attempt as AttemptHandle;
    this.status = 'stopping';
    try {
      const savepoint = await driver.triggerSavepoint({ stop: true });
      // If the attempt ends first (a task failed after the savepoint went to the sinks), the runner ends the job
      // as stopped all the same: restoring the savepoint commits whatever a sink had not.
      await attempt.notified(savepoint.checkpointId).catch(() => undefined);
      attempt.stop(savepoint, await attempt.metrics());
      return savepoint;
    } catch (err) {
      // A failed attempt set 'restarting' or 'failed' already; otherwise the job keeps running.
      if (this.status === 'stopping') this.status = 'running';
      throw err;
    }
  }

  private runningDriver(what: string): CheckpointDriver {
    if (this.info.checkpointing === null) {
      throw new JobNotRunningError(`cannot ${what}: the job takes no checkpoints (run it with --checkpoint-dir)`);
    }
    const driver = this.attempt?.driver;
    if (this.status !== 'running' || driver === undefined) {
      throw new JobNotRunningError(`cannot ${what}: the job is ${this.status}`);
    }
    return driver;
  }
}
