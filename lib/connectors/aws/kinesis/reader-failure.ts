import { awsErrorName, errorMessage, failureHint, isTransient, KinesisSourceError } from './errors.ts';

/**
 * The error a reader fails with: a KinesisSourceError as it is, anything else wrapped with what the reader was
 * doing, where (the shard, or the stream), the AWS error name and a hint naming `through` (the service called).
 */
export function readerFailure(
  error: unknown,
  stream: string,
  shardId: string | undefined,
  doing: string,
  through = 'Kinesis',
  retriable = isTransient(error),
): KinesisSourceError {
  if (error instanceof KinesisSourceError) return error;
  const where = shardId === undefined ? `stream "${stream}"` : `shard ${shardId} of stream "${stream}"`;
  const name = awsErrorName(error);
  return new KinesisSourceError(
    `kinesis source: ${doing} ${where} failed${name === undefined ? '' : ` with ${name}`}: ${errorMessage(error)} (${failureHint(name, through, retriable)})`,
    shardId,
    { cause: error, retriable },
  );
}
