import { SluiceError } from '../core/index.ts';

/**
 * A checkpoint file is not what its writer produced: truncated, altered, missing, or from an unknown format.
 * Reading it again cannot help, so it is not retriable. Falling back to an older checkpoint would replay output
 * this one's sinks committed, so a restore refuses unless the user accepts it (see planRestore).
 */
export class CheckpointCorruptError extends SluiceError {
  /** The file (or checkpoint directory) that failed verification. */
  readonly path: string;
  /** What is wrong with it, without advice: `checkpoint file … is unusable: …`. */
  readonly problem: string;

  constructor(path: string, problem: string, options: { cause?: unknown } = {}) {
    const what = `checkpoint file ${path} is unusable: ${problem}`;
    super(
      'CHECKPOINT_CORRUPT',
      `${what}. Restore from an older checkpoint with --allow-replay (its output since is written again), ` +
        'or start with --fresh to ignore all checkpoints.',
      { cause: options.cause, retriable: false },
    );
    this.path = path;
    this.problem = what;
  }
}

/** Reading or writing checkpoint storage failed (disk full, permissions, I/O error); trying again may succeed. */
export class CheckpointIoError extends SluiceError {
  readonly path: string;
  readonly operation: string;

  constructor(operation: string, path: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'CHECKPOINT_IO',
      `could not ${operation} ${path}: ${reason}. ` +
        'Check that the checkpoint directory exists, is writable and has free space.',
      { cause, retriable: true },
    );
    this.path = path;
    this.operation = operation;
  }
}

/** A task's state holds a value the checkpoint format cannot encode (e.g. a Symbol). Retrying fails the same way. */
export class StateEncodeError extends SluiceError {
  constructor(what: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'STATE_ENCODE',
      `cannot encode the state of ${what}: ${reason}. ` +
        'Keep state to plain data: objects, arrays, Maps, Sets, Dates, strings, numbers, bigints, booleans.',
      { cause, retriable: false },
    );
  }
}
