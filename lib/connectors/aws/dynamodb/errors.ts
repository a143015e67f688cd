import { SluiceError, type SluiceErrorOptions } from '../../../core/index.ts';
import { awsErrorName, errorMessage } from '../kinesis/errors.ts';

/** Writing to DynamoDB failed: retries ran out (retriable: the job restarts and commits again) or a request DynamoDB rejects. */
export class DynamoDbSinkError extends SluiceError {
  /** DynamoDB's exception name or cancellation reason code, when there is one. */
  readonly errorCode: string | undefined;

  constructor(message: string, options: SluiceErrorOptions & { errorCode?: string | undefined } = {}) {
    super('DYNAMODB_SINK', message, options);
    this.errorCode = options.errorCode;
  }
}

/** What to do with a failed DynamoDB call. */
export type FailureKind =
  /** The commit marker exists: this chunk was committed before. */
  | 'already-committed'
  /** Throttling, a conflicting transaction, a server or network error: try again after a backoff. */
  | 'retry'
  /** The ClientRequestToken was used with other parameters within its 10 minutes: try again without it. */
  | 'token-mismatch'
  /** DynamoDB refuses the request itself (validation, sizes, a failed condition on user data). */
  | 'fatal';

const RETRY_NAMES = new Set([
  'TransactionConflictException',
  'TransactionInProgressException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);
const RETRY_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded', 'InternalServerError']);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ECONNABORTED', 'EHOSTUNREACH']);

interface AwsErrorShape {
  code?: unknown;
  $fault?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
  CancellationReasons?: { Code?: string }[];
}

/** Cancellation reason codes of a TransactionCanceledException, one per item of the request (in order). */
export function cancellationReasons(error: unknown): string[] {
  if (typeof error !== 'object' || error === null) return [];
  return ((error as AwsErrorShape).CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}

/**
 * Classifies a failed call. `markerIndex` is the position of the commit-marker Put in a TransactWriteItems request
 * (its cancellation reason ConditionalCheckFailed means "already committed").
 */
export function classifyFailure(error: unknown, markerIndex?: number): FailureKind {
  const name = awsErrorName(error);
  if (name === 'TransactionCanceledException') {
    const reasons = cancellationReasons(error);
    if (markerIndex !== undefined && reasons[markerIndex] === 'ConditionalCheckFailed') return 'already-committed';
    if (reasons.some((r) => RETRY_REASONS.has(r))) return 'retry';
    return 'fatal';
  }
  if (name === 'IdempotentParameterMismatchException') return 'token-mismatch';
  if (name !== undefined && RETRY_NAMES.has(name)) return 'retry';
  if (typeof error !== 'object' || error === null) return 'fatal';
  const e = error as AwsErrorShape;
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return 'retry';
  if (e.$retryable !== undefined && e.$retryable !== null) return 'retry';
  const status = e.$metadata?.httpStatusCode;
  if (e.$fault === 'server' || (status !== undefined && status >= 500)) return 'retry';
  return 'fatal';
}

export function describeFailure(error: unknown): string {
  const reasons = cancellationReasons(error);
  const message = errorMessage(error);
  return reasons.length > 0 ? `${message} (reasons: ${reasons.join(', ')})` : message;
}
