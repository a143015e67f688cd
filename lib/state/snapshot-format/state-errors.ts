import { SluiceError } from '../../core/index.ts';

/**
 * Stored keyed state (a state file, a RocksDB row) is not what its writer produced. Reading it again cannot help,
 * so it is not retriable; recovery falls back to an older checkpoint.
 */
export class StoredStateCorruptError extends SluiceError {
  constructor(source: string, problem: string, cause?: unknown) {
    super('STATE_CORRUPT', `keyed state in ${source} is unusable: ${problem}`, { cause, retriable: false });
  }
}

/** Local disk I/O of keyed state failed (disk full, permissions); trying again may succeed. */
export class StateIoError extends SluiceError {
  constructor(operation: string, path: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super('STATE_IO', `could not ${operation} ${path}: ${reason}. Check that the state directory is writable and has free space.`, {
      cause,
      retriable: true,
    });
  }
}
