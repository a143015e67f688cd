import { randomBytes } from 'node:crypto';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ConfigError, SluiceError } from '../../../core/index.ts';
import type { AwsClientOverrides } from '../client-config.ts';
import { deadLetterJson, type DeadLetter, type DeadLetterWriter } from '../dead-letter.ts';
import { backoffDelay, compileRetry, sleep, type RetryOptions, type RetryPolicy } from '../kinesis/backoff.ts';
import { errorMessage, isTransient } from '../kinesis/errors.ts';
import { createS3Client } from './s3-client.ts';
import { objectKey, parseS3Uri, s3Url, type S3Location } from './s3-location.ts';

/** Writing dead letters to S3 failed (after retries, or with an error retrying cannot fix). */
export class S3DeadLetterError extends SluiceError {
  constructor(message: string, options: { cause?: unknown; retriable: boolean }) {
    super('S3_DEAD_LETTER', message, options);
  }
}

export interface S3DeadLetterWriterOptions {
  /** `s3://bucket/prefix` under which letter files go. */
  readonly location: string;
  /** @default 100 ms base, 5 s ceiling, 10 attempts */
  readonly retry?: RetryOptions;
  /** Region, endpoint, credentials...; unset values come from the SDK's default chains. */
  readonly aws?: AwsClientOverrides;
  /** @default true when an endpoint is configured (option or AWS_ENDPOINT_URL[_S3]) */
  readonly forcePathStyle?: boolean;
  /** Use this client instead of creating one (not destroyed by `close`). */
  readonly s3Client?: S3Client;
  /** Clock for object names, epoch ms. @default Date.now */
  readonly now?: () => number;
}

/**
 * Writes each batch of dead letters as one JSON Lines object (`deadLetterJson` per line) under
 * `<prefix>/dt=<yyyy-mm-dd>/<epoch ms>-<writer id>-<n>.jsonl` (UTC date: a Hive-style partition that Athena and
 * Glue read as a column). Names never repeat, so concurrent writers and a letter written again after a restart
 * (at least once) never overwrite each other. Safe for concurrent `write` calls.
 */
export class S3DeadLetterWriter implements DeadLetterWriter {
  private readonly location: S3Location;
  private readonly retry: RetryPolicy;
  private readonly writerId = randomBytes(6).toString('hex');
  private readonly now: () => number;
  private sequence = 0;
  private client: S3Client | undefined;
  private readonly ownsClient: boolean;

  constructor(private readonly options: S3DeadLetterWriterOptions) {
    const parsed = parseS3Uri(options.location);
    if (parsed.params.size > 0) throw new ConfigError(`S3 dead-letter location "${options.location}" takes no parameters`);
    this.location = parsed;
    this.retry = compileRetry('S3 dead-letter writer', options.retry);
    this.now = options.now ?? Date.now;
    this.client = options.s3Client;
    this.ownsClient = options.s3Client === undefined;
  }

  async write(letters: readonly DeadLetter[]): Promise<void> {
    if (letters.length === 0) return;
    const at = this.now();
    const day = new Date(at).toISOString().slice(0, 10);
    const path = `dt=${day}/${at}-${this.writerId}-${++this.sequence}.jsonl`;
    const key = objectKey(this.location, path);
    const body = letters.map((letter) => deadLetterJson(letter)).join('\n') + '\n';
    const client = this.s3();
    for (let attempt = 1; ; attempt++) {
      try {
        await client.send(
          new PutObjectCommand({ Bucket: this.location.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson' }),
        );
        return;
      } catch (error) {
        const transient = isTransient(error);
        if (transient && attempt < this.retry.maxAttempts) {
          await sleep(backoffDelay(this.retry, attempt));
          continue;
        }
        throw new S3DeadLetterError(
          `could not write ${letters.length} dead letter(s) to ${s3Url(this.location, path)}${transient ? ` after ${attempt} attempts` : ''}: ${errorMessage(error)}`,
          { cause: error, retriable: transient },
        );
      }
    }
  }

  close(): void {
    if (this.ownsClient) this.client?.destroy();
    this.client = undefined;
  }

  private s3(): S3Client {
    this.client ??= createS3Client(this.options.aws, this.options.forcePathStyle);
    return this.client;
  }
}

/** `new S3DeadLetterWriter(options)`: dead letters as JSON Lines objects under an S3 prefix. */
export function s3DeadLetterWriter(options: S3DeadLetterWriterOptions): S3DeadLetterWriter {
  return new S3DeadLetterWriter(options);
}
