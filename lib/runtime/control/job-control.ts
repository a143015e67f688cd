/**
 * What a running job offers to its operators (the REST API of `sluice run`, later the console), and the JSON
 * shapes of the answers. docs/rest-api.md documents them; keep the two in step.
 */

/**
 * `running`: tasks are processing. `restarting`: a task failed, the job restarts from its latest checkpoint.
 * `stopping`: a stop-with-savepoint is under way. `finished`: all input was processed. `stopped`: stopped with a
 * savepoint. `failed`: the job failed for good.
 */
export type JobStatus = 'running' | 'restarting' | 'stopping' | 'finished' | 'stopped' | 'failed';

/** An entry of `GET /jobs`. */
export interface JobOverview {
  readonly id: string;
  readonly name: string;
  readonly status: JobStatus;
}

export interface VertexView {
  readonly id: number;
  readonly name: string;
  readonly parallelism: number;
}

/** `GET /jobs/:id`. */
export interface JobDetails extends JobOverview {
  /** Epoch ms when `sluice run` started the job. */
  readonly startTime: number;
  readonly durationMs: number;
  /** The job's default parallelism (`--parallelism`); vertices may differ. */
  readonly parallelism: number;
  /** Worker threads running the subtasks (`--threads`): subtask s of every operator runs on thread s % workerThreads. */
  readonly workerThreads: number;
  readonly maxParallelism: number;
  readonly vertices: readonly VertexView[];
  /** Records read by all sources in the current attempt (a restart counts again from its checkpoint). */
  readonly recordsRead: number;
  /**
   * Late records dropped so far in the current attempt: behind the watermark, with no late-data side output to go
   * to. Not 0 means output is missing records; see the job's warnings on stderr.
   */
  readonly droppedLateRecords: number;
  /** Restarts after task failures so far. */
  readonly restarts: number;
  /** Null when the job takes no checkpoints. */
  readonly checkpointing: {
    readonly dir: string;
    readonly intervalMs: number;
    readonly savepointDir: string;
  } | null;
  /** What the current attempt started from: `savepoint /path`, `checkpoint 12`, or null (from the beginning). */
  readonly restoredFrom: string | null;
  /** The savepoint a stopped job was stopped with. */
  readonly savepointPath: string | null;
}

/** An entry of `GET /jobs/:id/checkpoints`, newest first. */
export interface CheckpointView {
  readonly id: number;
  readonly status: 'in-progress' | 'completed' | 'failed';
  readonly savepoint: boolean;
  /** Taken after every source finished, before the job ends. */
  readonly final: boolean;
  /** Epoch ms. */
  readonly triggerTime: number;
  /** Null while in progress. */
  readonly durationMs: number | null;
  /** Bytes of task state acknowledged so far. */
  readonly sizeBytes: number;
  readonly acknowledgedTasks: number;
  readonly totalTasks: number;
  readonly failureReason: string | null;
  /** Directory of a completed savepoint; null otherwise. */
  readonly path: string | null;
}

/** The answer of `POST /jobs/:id/savepoints` and `POST /jobs/:id/stop`. */
export interface SavepointView {
  readonly checkpointId: number;
  readonly path: string;
}

export interface JobControl {
  readonly id: string;
  overview(): JobOverview;
  /** Asks the worker threads for their counters (briefly; falls back to the last answer). */
  details(): Promise<JobDetails>;
  checkpoints(): CheckpointView[];
  /** Resolves once the savepoint is complete. JobNotRunningError / SavepointFailedError otherwise. */
  triggerSavepoint(): Promise<SavepointView>;
  /**
   * Takes a savepoint, lets the sinks commit what it covers, then ends the job (`sluice run` exits with 0).
   * Resolves once the sinks have committed, just before the job ends.
   */
  stopWithSavepoint(): Promise<SavepointView>;
}
