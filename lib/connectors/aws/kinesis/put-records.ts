import type { PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { awsErrorName, errorMessage, failureHint, isThrottling, isTransient, KinesisSinkError } from './errors.ts';
import { backoffDelay, sleep, type RetryPolicy } from './backoff.ts';
import { streamRef, type KinesisApi } from './kinesis-api.ts';

/** PutRecords limits: entries per call, bytes per call, bytes per record (data plus partition key). */
export const PUT_RECORDS_MAX_ENTRIES = 500;
export const PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024;
export const MAX_RECORD_BYTES = 1024 * 1024;

/** What an entry counts against the limits: its data and its partition key (as UTF-8). */
export function entrySize(entry: PutRecordsRequestEntry): number {
  return (entry.Data?.byteLength ?? 0) + Buffer.byteLength(entry.PartitionKey ?? '', 'utf8');
}

/** Per-entry error codes that a later attempt can fix. */
const RETRIABLE_ENTRY_ERRORS = new Set(['ProvisionedThroughputExceededException', 'InternalFailure', 'InternalFailureException']);

/**
 * Writes `entries` (within one call's limits) and retries only the entries that failed, with jittered backoff.
 * Throttling is retried until it passes; other transient failures `policy.maxAttempts` times. Per-key order holds
 * within a call but not across retries (a failed entry is written after later ones that succeeded), as with any
 * PutRecords producer.
 */
export async function putRecordsWithRetry(
  api: KinesisApi,
  stream: string,
  entries: PutRecordsRequestEntry[],
  policy: RetryPolicy,
  signal?: AbortSignal,
  random: () => number = Math.random,
): Promise<void> {
  let pending = entries;
  let attempt = 0;
  let retries = 0;
  while (pending.length > 0) {
    if (aborted(signal)) throw new KinesisSinkError(`PutRecords to "${stream}" cancelled`, pending.length, undefined);
    let retryCode: string | undefined;
    try {
      const out = await api.putRecords({ ...streamRef(stream), Records: pending }, signal);
      if ((out.FailedRecordCount ?? 0) === 0) return;
      const results = out.Records ?? [];
      const failed: PutRecordsRequestEntry[] = [];
      let fatal: { code: string; message: string } | undefined;
      let onlyThrottled = true;
      for (let i = 0; i < pending.length; i++) {
        const code = results[i]?.ErrorCode;
        if (code === undefined) continue;
        failed.push(pending[i] as PutRecordsRequestEntry);
        if (code !== 'ProvisionedThroughputExceededException') onlyThrottled = false;
        if (!RETRIABLE_ENTRY_ERRORS.has(code) && fatal === undefined) fatal = { code, message: results[i]?.ErrorMessage ?? '' };
      }
      if (fatal !== undefined) {
        throw new KinesisSinkError(
          `PutRecords to "${stream}": ${failed.length} of ${pending.length} records were rejected with ${fatal.code} (${fatal.message}); this error does not pass on retry: check the stream's encryption key and permissions`,
          failed.length,
          fatal.code,
        );
      }
      if (failed.length < pending.length) retries = 0;
      else if (!onlyThrottled) attempt++;
      retryCode = onlyThrottled ? 'ProvisionedThroughputExceededException' : 'InternalFailure';
      pending = failed;
    } catch (error) {
      if (error instanceof KinesisSinkError) throw error;
      if (!isTransient(error) || aborted(signal)) {
        const name = awsErrorName(error);
        const hint = name === 'AccessDeniedException' ? 'give the job credentials allowed kinesis:PutRecords' : failureHint(name, 'Kinesis', isTransient(error));
        throw new KinesisSinkError(
          `PutRecords to "${stream}" failed${name === undefined ? '' : ` with ${name}`}: ${errorMessage(error)} (${hint})`,
          pending.length,
          awsErrorName(error),
          { cause: error, retriable: isTransient(error) },
        );
      }
      if (!isThrottling(error)) attempt++;
      retryCode = awsErrorName(error);
      if (attempt >= policy.maxAttempts) {
        throw new KinesisSinkError(
          `PutRecords to "${stream}" failed ${attempt} times in a row, last with ${retryCode ?? 'an error'}: ${errorMessage(error)}`,
          pending.length,
          retryCode,
          { cause: error, retriable: true },
        );
      }
    }
    if (attempt >= policy.maxAttempts) {
      throw new KinesisSinkError(
        `PutRecords to "${stream}": ${pending.length} records still failed after ${attempt} attempts (last error ${retryCode ?? 'unknown'})`,
        pending.length,
        retryCode,
        { retriable: true },
      );
    }
    retries++;
    await sleep(backoffDelay(policy, retries, random), signal);
  }
}

/** A function, so that the compiler does not assume `aborted` unchanged across awaits. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Cuts `entries` into calls within PutRecords' limits (500 entries, 5 MiB). */
export function chunkEntries(entries: readonly PutRecordsRequestEntry[]): PutRecordsRequestEntry[][] {
  const chunks: PutRecordsRequestEntry[][] = [];
  let current: PutRecordsRequestEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = entrySize(entry);
    if (current.length > 0 && (current.length >= PUT_RECORDS_MAX_ENTRIES || bytes + size > PUT_RECORDS_MAX_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
