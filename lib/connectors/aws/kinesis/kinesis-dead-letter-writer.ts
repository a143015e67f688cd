import type { PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { ConfigError } from '../../../core/index.ts';
import { deadLetterJson, type DeadLetter, type DeadLetterWriter } from '../dead-letter.ts';
import { compileRetry, type RetryOptions } from './backoff.ts';
import { acquireKinesisApi, type KinesisApiLease, type KinesisClientOptions } from './kinesis-api.ts';
import { chunkEntries, MAX_RECORD_BYTES, putRecordsWithRetry } from './put-records.ts';

export interface KinesisDeadLetterWriterOptions extends KinesisClientOptions {
  /** The dead-letter stream (name or ARN). */
  readonly stream: string;
  /** @default 100 ms base, 5 s ceiling, 10 attempts (throttling: unlimited) */
  readonly retry?: RetryOptions;
}

const utf8 = new TextEncoder();

/**
 * Writes dead letters to a Kinesis stream, one JSON record per letter (`deadLetterJson`), partitioned by the
 * shard id of the rejected record. A letter that would exceed Kinesis's 1 MiB record limit (its data grows by a
 * third in base64) keeps a prefix of `data` and says `"truncated": true` with the original `dataBytes`.
 */
export function kinesisDeadLetterWriter(options: KinesisDeadLetterWriterOptions): DeadLetterWriter {
  if (typeof options.stream !== 'string' || options.stream.length === 0) {
    throw new ConfigError('kinesis dead-letter writer: `stream` (a stream name or ARN) is required');
  }
  const retry = compileRetry('kinesis dead-letter writer', options.retry);
  let lease: KinesisApiLease | undefined;
  return {
    async write(letters: readonly DeadLetter[]): Promise<void> {
      if (letters.length === 0) return;
      lease ??= acquireKinesisApi(options);
      for (const chunk of chunkEntries(letters.map(letterEntry))) {
        await putRecordsWithRetry(lease.api, options.stream, chunk, retry);
      }
    },
    close(): void {
      lease?.release();
      lease = undefined;
    },
  };
}

function letterEntry(letter: DeadLetter): PutRecordsRequestEntry {
  const key = letter.shardId.length > 0 ? letter.shardId : 'dead-letter';
  const limit = MAX_RECORD_BYTES - Buffer.byteLength(key, 'utf8');
  let data = utf8.encode(deadLetterJson(letter));
  if (data.byteLength > limit) {
    const dataBytes = Buffer.byteLength(letter.data, 'base64');
    const overhead = utf8.encode(deadLetterJson({ ...letter, data: '' }, { truncated: true, dataBytes })).byteLength;
    // Base64 is ASCII: one byte per character; keep whole 4-character groups.
    const keep = Math.max(0, Math.floor((limit - overhead) / 4) * 4);
    data = utf8.encode(deadLetterJson({ ...letter, data: letter.data.slice(0, keep) }, { truncated: true, dataBytes }));
  }
  return { Data: data, PartitionKey: key };
}
