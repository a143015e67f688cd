import { SluiceError, type SluiceErrorOptions } from '../../../core/index.ts';

/** Reading a Kinesis stream failed (after retries, or with an error that retrying cannot fix). */
export class KinesisSourceError extends SluiceError {
  /** Shard being read, when the failure concerns one. */
  readonly shardId: string | undefined;

  constructor(message: string, shardId: string | undefined, options: SluiceErrorOptions = {}) {
    super('KINESIS_SOURCE', message, options);
    this.shardId = shardId;
  }
}

/** Writing to a Kinesis stream failed: a record Kinesis rejects, or retries ran out. */
export class KinesisSinkError extends SluiceError {
  /** Records not written by the failed call (0 when the whole call failed before any entry had a result). */
  readonly failedRecords: number;
  /** Kinesis's error code of the first failed entry, or the exception name of a failed call. */
  readonly errorCode: string | undefined;

  constructor(message: string, failedRecords: number, errorCode: string | undefined, options: SluiceErrorOptions = {}) {
    super('KINESIS_SINK', message, options);
    this.failedRecords = failedRecords;
    this.errorCode = errorCode;
  }
}

/** The SDK's exception name (`ProvisionedThroughputExceededException`, ...), or undefined for other errors. */
export function awsErrorName(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const name = (error as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'LimitExceededException',
  'ThrottlingException',
  'KMSThrottlingException',
  'TooManyRequestsException',
]);

/** Kinesis asks the caller to slow down: always worth retrying after a backoff. */
export function isThrottling(error: unknown): boolean {
  const name = awsErrorName(error);
  return name !== undefined && THROTTLING.has(name);
}

const TRANSIENT = new Set(['InternalFailureException', 'ServiceUnavailableException', 'ServiceUnavailable', 'TimeoutError', 'RequestTimeout']);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED']);

/** A failure that may pass on its own (server errors, network errors, throttling). */
export function isTransient(error: unknown): boolean {
  if (isThrottling(error)) return true;
  if (error instanceof SluiceError) return error.retriable;
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; $fault?: unknown; $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
  if (typeof e.name === 'string' && TRANSIENT.has(e.name)) return true;
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (e.$retryable !== undefined && e.$retryable !== null) return true;
  const status = e.$metadata?.httpStatusCode;
  return e.$fault === 'server' || (status !== undefined && status >= 500);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How to fix a failed call, by exception name: the second half of an error message. */
export function failureHint(name: string | undefined, through: string, retriable: boolean): string {
  switch (name) {
    case 'AccessDeniedException':
    case 'UnrecognizedClientException':
    case 'ExpiredTokenException':
      return 'give the job credentials allowed kinesis:ListShards, GetShardIterator, GetRecords (and for fan-out DescribeStreamSummary, RegisterStreamConsumer, DescribeStreamConsumer, SubscribeToShard)';
    case 'ResourceNotFoundException':
      return 'check the stream name or ARN, the region and the endpoint (AWS_ENDPOINT_URL_KINESIS); a shard expired past the retention period cannot be read any more';
    case 'InvalidArgumentException':
      return 'a checkpointed position may belong to another stream of the same name: start without the checkpoint';
    default:
      if (name?.startsWith('KMS') === true) return "check the stream's KMS key and the job's permission to use it";
      return retriable
        ? `${through} kept failing; the job restarts from its latest checkpoint`
        : `retrying cannot help; fix the cause in ${through} and restart the job`;
  }
}

/**
 * An error event in a SubscribeToShard stream. It ends the subscription and carries the event's exception name
 * as `name` (what the SDK would have thrown), so the reader classifies it as it classifies the SDK's own errors.
 */
export class SubscribeToShardEventError extends SluiceError {
  constructor(eventName: string, message: string) {
    const name = eventName === '$unknown' ? 'UnknownEvent' : eventName;
    // isTransient trusts a SluiceError's own flag: give the answer it gives for the SDK error of that name.
    super('KINESIS_SOURCE', `SubscribeToShard event ${eventName}: ${message}`, { retriable: THROTTLING.has(name) || TRANSIENT.has(name) });
    this.name = name;
  }
}
