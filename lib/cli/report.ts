import { ConfigError, SluiceError, UserFunctionError, describeOrigin, type RecordOrigin } from '../core/index.ts';
import type { JobResult } from '../runtime/job-result.ts';
import { ExitCode } from './exit-codes.ts';

const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/**
 * The line printed when a job ends: how (finished, or stopped with a savepoint), records read, duration, throughput,
 * and the late records dropped, if any (they are in no output, so a user must not have to look for them).
 */
export function formatSummary(
  jobName: string,
  result: Pick<JobResult, 'durationMs' | 'sourceRecords' | 'stoppedWithSavepoint'> & Partial<Pick<JobResult, 'droppedLateRecords'>>,
): string {
  const seconds = result.durationMs / 1000;
  const perSecond = result.sourceRecords / Math.max(seconds, 0.001);
  const how = result.stoppedWithSavepoint === undefined ? 'finished' : `stopped with savepoint ${result.stoppedWithSavepoint}`;
  const dropped = result.droppedLateRecords ?? 0;
  const late = dropped === 0 ? '' : `; ${count(dropped)} late record${dropped === 1 ? '' : 's'} dropped (behind the watermark, no late-data output)`;
  return `sluice: job "${jobName}" ${how}: ${count(result.sourceRecords)} records read in ${seconds.toFixed(2)} s (${count(perSecond)} events/s)${late}`;
}

/** What is known about a failed user function, whether it failed in this thread or in a worker thread. */
interface UserFunctionFailure {
  operator: string;
  subtask: number;
  origin: RecordOrigin | undefined;
  cause: string;
}

function isOrigin(value: unknown): value is RecordOrigin {
  return typeof value === 'object' && value !== null && typeof (value as RecordOrigin).split === 'string' && typeof (value as RecordOrigin).offset === 'number';
}

/**
 * A worker thread reports a UserFunctionError as plain data: code USER_FUNCTION, the message, and details
 * {operator, subtask, origin}. The cause's message is what follows the prefix UserFunctionError puts before it.
 */
function userFunctionFailure(err: unknown): UserFunctionFailure | undefined {
  if (err instanceof UserFunctionError) {
    const cause = err.cause instanceof Error ? err.cause.message : String(err.cause);
    return { operator: err.operator, subtask: err.subtask, origin: err.origin, cause };
  }
  if (!(err instanceof SluiceError) || err.code !== 'USER_FUNCTION') return undefined;
  const details = (err as SluiceError & { details?: Record<string, unknown> }).details ?? {};
  const { operator, subtask } = details;
  if (typeof operator !== 'string' || typeof subtask !== 'number') return undefined;
  const origin = isOrigin(details['origin']) ? details['origin'] : undefined;
  const prefix = `operator "${operator}" (subtask ${subtask}) failed on record from ${describeOrigin(origin)}: `;
  const cause = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
  return { operator, subtask, origin, cause };
}

/** The task error behind a job failure (runners wrap it in JobFailedError). */
function rootOf(err: unknown): unknown {
  let current = err;
  while (current instanceof SluiceError && current.code === 'JOB_FAILED' && current.cause !== undefined) current = current.cause;
  return current;
}

/** 2 for configuration and usage problems (the job did not start, or a task rejected its configuration), else 1. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof ConfigError) return ExitCode.usage;
  const root = rootOf(err);
  return root instanceof SluiceError && root.code === 'CONFIG' ? ExitCode.usage : ExitCode.jobFailed;
}

const indent = (text: string): string => text.split('\n').map((line) => `  ${line}`).join('\n');

/**
 * The lines printed for a failed run. User function failures name the operator, the subtask, the record's origin
 * and the cause; configuration errors print their message (which says how to fix it); unexpected errors add
 * their stack, since they point at a bug.
 */
export function formatFailure(jobName: string, err: unknown): string[] {
  const root = rootOf(err);
  const failure = userFunctionFailure(root);
  if (failure !== undefined) {
    return [
      `error: job "${jobName}" failed: a user function threw`,
      `  operator: ${failure.operator} (subtask ${failure.subtask})`,
      `  record:   ${describeOrigin(failure.origin)}`,
      `  cause:    ${failure.cause}`,
    ];
  }
  const message = root instanceof Error ? root.message : String(root);
  if (exitCodeOf(err) === ExitCode.usage) return [`error: ${message}`];
  const lines = [`error: job "${jobName}" failed: ${message}`];
  const expected = root instanceof SluiceError && root.code !== 'INTERNAL' && root.code !== 'TASK_FAILED';
  if (!expected && root instanceof Error && root.stack !== undefined) lines.push(indent(root.stack));
  return lines;
}
