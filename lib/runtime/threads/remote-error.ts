import { SluiceError, isErrorCode } from '../../core/index.ts';

/** An error as it crosses a thread boundary: plain data. */
export interface SerializedError {
  name: string;
  message: string;
  stack: string | undefined;
  code: string | undefined;
  retriable: boolean;
  details: Record<string, unknown>;
}

export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) {
    return { name: 'Error', message: String(err), stack: undefined, code: undefined, retriable: false, details: {} };
  }
  const details: Record<string, unknown> = {};
  for (const key of ['operator', 'subtask', 'origin'] as const) {
    if (key in err) details[key] = (err as unknown as Record<string, unknown>)[key];
  }
  return {
    name: err.name,
    message: err.message,
    stack: err.stack,
    code: err instanceof SluiceError ? err.code : undefined,
    retriable: err instanceof SluiceError ? err.retriable : false,
    details,
  };
}

/** A task failure reported by a worker thread: keeps the original code, message, operator, subtask and origin. */
export class RemoteTaskError extends SluiceError {
  readonly remoteName: string;
  readonly details: Record<string, unknown>;

  constructor(serialized: SerializedError) {
    super(isErrorCode(serialized.code) ? serialized.code : 'TASK_FAILED', serialized.message, { retriable: serialized.retriable });
    this.remoteName = serialized.name;
    this.details = serialized.details;
    if (serialized.stack !== undefined) this.stack = serialized.stack;
  }
}
