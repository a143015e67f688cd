import { SluiceError } from '../../core/index.ts';

/**
 * The request does not fit the job's state: it is not running (restarting, stopping, finished), or it takes no
 * checkpoints so it cannot take a savepoint. Asking again later may succeed. The REST API answers 409.
 */
export class JobNotRunningError extends SluiceError {
  constructor(message: string) {
    super('JOB_NOT_RUNNING', message, { retriable: true });
  }
}

/** A savepoint was triggered but did not complete (a task declined it, it timed out, writing it failed). REST: 500. */
export class SavepointFailedError extends SluiceError {
  constructor(message: string, cause?: unknown) {
    super('SAVEPOINT_FAILED', message, { cause, retriable: true });
  }
}
