import { ConfigError } from '../core/index.ts';

/** How often and how patiently checkpoints are taken. At most one checkpoint is in flight at any time. */
export interface CheckpointCoordinatorOptions {
  /** Time between the triggers of two periodic checkpoints. Required; at least 1. */
  intervalMs: number;
  /**
   * Least time between the end (completion or abort) of one checkpoint and the trigger of the next periodic one,
   * so that slow checkpoints leave the job time to process records. Savepoints and the final checkpoint ignore it.
   * @default 0
   */
  minPauseMs?: number;
  /** A checkpoint not acknowledged by every task this long after its trigger is aborted. @default 600_000 (10 min) */
  timeoutMs?: number;
  /**
   * Complete checkpoints to keep; older ones are discarded. More than one, so that a newest checkpoint found
   * corrupt at restore still leaves a previous complete one. Savepoints are never discarded. @default 3
   */
  retain?: number;
  /** Entries of checkpoint history kept for the REST API. @default 20 */
  historySize?: number;
  /**
   * Consecutive failed checkpoints tolerated (as Flink's tolerable failed checkpoints): the next failure fails the
   * job. A checkpoint fails when a task cannot write its state, the metadata commit fails, or it times out; a
   * completed checkpoint or savepoint resets the count, and failed savepoints do not count. @default 3
   */
  tolerableFailures?: number;
  /**
   * After a failed checkpoint, the final checkpoint (taken once every source finished, with no interval to wait)
   * is retried no sooner than this, doubled for each further consecutive failure up to `maxFailureBackoffMs`, so
   * that failing storage is not retried in a busy loop. Periodic checkpoints keep to `intervalMs`; savepoints are
   * not held back. @default 500
   */
  failureBackoffMs?: number;
  /** Longest wait between a failed checkpoint and the retry of the final one. @default 30_000 */
  maxFailureBackoffMs?: number;
}

export interface CompiledCoordinatorOptions {
  readonly intervalMs: number;
  readonly minPauseMs: number;
  readonly timeoutMs: number;
  readonly retain: number;
  readonly historySize: number;
  readonly tolerableFailures: number;
  readonly failureBackoffMs: number;
  readonly maxFailureBackoffMs: number;
}

export const DEFAULT_CHECKPOINT_TIMEOUT_MS = 10 * 60 * 1000;
export const DEFAULT_CHECKPOINTS_RETAINED = 3;
export const DEFAULT_CHECKPOINT_HISTORY_SIZE = 20;
export const DEFAULT_TOLERABLE_CHECKPOINT_FAILURES = 3;
export const DEFAULT_CHECKPOINT_FAILURE_BACKOFF_MS = 500;
export const DEFAULT_MAX_CHECKPOINT_FAILURE_BACKOFF_MS = 30_000;

function integer(name: string, value: number | undefined, fallback: number | undefined, min: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new ConfigError(`checkpoint option ${name} is required`);
    return fallback;
  }
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(`checkpoint option ${name} must be an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

/** Validates once and fills in defaults; invalid options stop the job before it starts. */
export function compileCoordinatorOptions(options: CheckpointCoordinatorOptions): CompiledCoordinatorOptions {
  const failureBackoffMs = integer('failureBackoffMs', options.failureBackoffMs, DEFAULT_CHECKPOINT_FAILURE_BACKOFF_MS, 0);
  return {
    intervalMs: integer('intervalMs', options.intervalMs, undefined, 1),
    minPauseMs: integer('minPauseMs', options.minPauseMs, 0, 0),
    timeoutMs: integer('timeoutMs', options.timeoutMs, DEFAULT_CHECKPOINT_TIMEOUT_MS, 1),
    retain: integer('retain', options.retain, DEFAULT_CHECKPOINTS_RETAINED, 1),
    historySize: integer('historySize', options.historySize, DEFAULT_CHECKPOINT_HISTORY_SIZE, 1),
    tolerableFailures: integer('tolerableFailures', options.tolerableFailures, DEFAULT_TOLERABLE_CHECKPOINT_FAILURES, 0),
    failureBackoffMs,
    maxFailureBackoffMs: integer('maxFailureBackoffMs', options.maxFailureBackoffMs, Math.max(DEFAULT_MAX_CHECKPOINT_FAILURE_BACKOFF_MS, failureBackoffMs), failureBackoffMs),
  };
}
