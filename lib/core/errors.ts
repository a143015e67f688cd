/**
 * Typed errors. Every error says what went wrong, where, and how to fix it, carries its `cause`,
 * and says whether retrying the same action can succeed (`retriable`).
 */
export interface SluiceErrorOptions {
  cause?: unknown;
  retriable?: boolean;
}

/**
 * Every error code Sluice throws, one per kind of failure. Scripts and tests branch on `code`, so a new kind of
 * error adds its code here (the compiler then refuses a misspelt one); a task error from another thread keeps its
 * code (see isErrorCode).
 */
export const ERROR_CODES = [
  'APPEND_COMMIT',
  'CANCELLED',
  'CHECKPOINTING_FAILED',
  'CHECKPOINT_CORRUPT',
  'CHECKPOINT_IO',
  'CLUSTER_CONTROL',
  'CONFIG',
  'COORDINATOR_SUPERSEDED',
  'DYNAMODB_SINK',
  'ENOSPC',
  'EXCHANGE',
  'FENCED',
  'INJECTED_FAILURE',
  'INTERNAL',
  'INVALID_KEY',
  'INVALID_TIMESTAMP',
  'JOB_FAILED',
  'JOB_NOT_RUNNING',
  'KEY_GROUP_MISMATCH',
  'KINESIS_SINK',
  'KINESIS_SOURCE',
  'LEASE_LOST',
  'NON_FINITE_NUMBER',
  'PART_FILE_COMMIT',
  'REST_REQUEST',
  'RUNAWAY_TIMERS',
  'S3_DEAD_LETTER',
  'S3_REQUEST',
  'SAVEPOINT_FAILED',
  'SINK_COMMIT',
  'SLOT_FAILED',
  'STATE_CORRUPT',
  'STATE_ENCODE',
  'STATE_IO',
  'TASK_FAILED',
  'USER_FUNCTION',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** Whether a code read from outside the type system (a message from another thread) is one of ours. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && KNOWN_CODES.has(code);
}

export class SluiceError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: SluiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** Invalid configuration or usage: the job must not start (CLI exit code 2). */
export class ConfigError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('CONFIG', message, options);
  }
}

/** Where a record came from: its source split and its offset in that split. */
export interface RecordOrigin {
  split: string;
  offset: number;
}

export function describeOrigin(origin: RecordOrigin | undefined): string {
  return origin === undefined ? 'unknown origin' : `split ${origin.split} offset ${origin.offset}`;
}

/** A user function threw: names the operator, the subtask and the record's origin. */
export class UserFunctionError extends SluiceError {
  readonly operator: string;
  readonly subtask: number;
  readonly origin: RecordOrigin | undefined;

  constructor(operator: string, subtask: number, origin: RecordOrigin | undefined, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'USER_FUNCTION',
      `operator "${operator}" (subtask ${subtask}) failed on record from ${describeOrigin(origin)}: ${reason}`,
      { cause, retriable: false },
    );
    this.operator = operator;
    this.subtask = subtask;
    this.origin = origin;
  }
}

/** The job stopped because a task failed; `cause` is the task's error. */
export class JobFailedError extends SluiceError {
  constructor(message: string, cause: unknown) {
    super('JOB_FAILED', message, { cause, retriable: true });
  }
}

/** A wait ended because the job is being cancelled, not because anything failed. */
export class CancelledError extends SluiceError {
  constructor(message = 'cancelled') {
    super('CANCELLED', message);
  }
}

/** An internal invariant broke: a bug in Sluice, not in the job. */
export class InternalError extends SluiceError {
  constructor(message: string, cause?: unknown) {
    super('INTERNAL', message, { cause });
  }
}

/**
 * A record's event timestamp is invalid (see MIN_TIMESTAMP in time.ts) and there is no dead-letter output to send
 * the record to. Names the operator that assigned the timestamp, the record's origin and the value.
 */
export class InvalidTimestampError extends SluiceError {
  readonly operator: string;
  readonly subtask: number;
  readonly origin: RecordOrigin | undefined;
  readonly timestamp: unknown;

  constructor(operator: string, subtask: number, origin: RecordOrigin | undefined, timestamp: unknown, reason: string, remedy: string) {
    super('INVALID_TIMESTAMP', `operator "${operator}" (subtask ${subtask}): record from ${describeOrigin(origin)}: ${reason}; ${remedy}`, {
      retriable: false,
    });
    this.operator = operator;
    this.subtask = subtask;
    this.origin = origin;
    this.timestamp = timestamp;
  }
}

/**
 * A sink was given a number it cannot write (NaN or ±Infinity: JSON has no such numbers, and JSON.stringify
 * would write null). Names the sink operator and the field path, e.g. `$.totals[2].cents`.
 */
export class NonFiniteNumberError extends SluiceError {
  readonly operator: string;
  readonly path: string;
  readonly value: number;

  constructor(operator: string, path: string, value: number, hint: string) {
    super('NON_FINITE_NUMBER', `sink "${operator}": field ${path} is ${String(value)}, which it cannot write as a number; ${hint}`, {
      retriable: false,
    });
    this.operator = operator;
    this.path = path;
    this.value = value;
  }
}
