import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { NoSuchKey, NotFound, S3Client, S3ServiceException } from '@aws-sdk/client-s3';

/**
 * An S3 bucket store in memory behind a real `S3Client`: a middleware at the client's first step answers
 * PutObject (honouring `IfNoneMatch: '*'`, as S3 has since 2024 and s3rver does not), GetObject, HeadObject,
 * DeleteObject, DeleteObjects and ListObjectsV2 (prefix, delimiter, pages of `MaxKeys`) before anything is
 * serialised or sent. Errors have the shapes the SDK gives for real S3 responses: `NoSuchKey` (404) from GetObject,
 * `NotFound` (404) from HeadObject, and an `S3ServiceException` named `PreconditionFailed` with HTTP status 412 for
 * a conditional put on an existing key. Buckets exist on first use.
 *
 * Faults: `intercept` sees every call first and may throw instead of it, or run it (`apply`) and then throw, as when
 * S3 stored an object but the response was lost.
 */
export class InMemoryS3 {
  private readonly buckets = new Map<string, Map<string, StoredObject>>();
  private interceptor: S3Interceptor | undefined;
  /** Calls answered, by command name (e.g. `PutObjectCommand`), for tests that count requests. */
  readonly calls: string[] = [];

  /** A client on this store; each has its own middleware, all share the objects. */
  client(): S3Client {
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    const client = new S3Client({
      region: 'us-east-1',
      credentials: { accessKeyId: 'in-memory', secretAccessKey: 'in-memory' },
      forcePathStyle: true,
      maxAttempts: 1,
    });
    client.middlewareStack.add(
      (_next, context) => async (args) => {
        const input = (args as { input: Record<string, unknown> }).input;
        return { output: await this.dispatch(context.commandName ?? '', input), response: undefined } as never;
      },
      { step: 'initialize', name: 'inMemoryS3', priority: 'low' },
    );
    return client;
  }

  /** Sets (or with undefined clears) the function every later call goes through. */
  intercept(interceptor: S3Interceptor | undefined): void {
    this.interceptor = interceptor;
  }

  /** The keys of a bucket, sorted. */
  keys(bucket: string): string[] {
    return [...this.bucket(bucket).keys()].sort();
  }

  /** An object's bytes, undefined when absent. */
  object(bucket: string, key: string): Uint8Array | undefined {
    return this.bucket(bucket).get(key)?.body;
  }

  private async dispatch(command: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
    const apply = async (): Promise<Record<string, unknown>> => {
      this.calls.push(command);
      return this.answer(command, input);
    };
    const interceptor = this.interceptor;
    return interceptor === undefined ? apply() : interceptor(command, input, apply);
  }

  private async answer(command: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
    const bucket = this.bucket(String(input['Bucket']));
    const key = String(input['Key']);
    switch (command) {
      case 'PutObjectCommand': {
        const body = await bytesOf(input['Body']);
        if (input['IfNoneMatch'] === '*' && bucket.has(key)) throw preconditionFailed(key);
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        const metadata = { ...((input['Metadata'] as Record<string, string> | undefined) ?? {}) };
        bucket.set(key, { body, etag, metadata });
        return { ...OK, ETag: etag };
      }
      case 'GetObjectCommand': {
        const found = bucket.get(key);
        if (found === undefined) throw new NoSuchKey({ message: 'The specified key does not exist.', $metadata: status(404) });
        return { ...OK, Body: streamOf(found.body), ContentLength: found.body.byteLength, ETag: found.etag, Metadata: found.metadata };
      }
      case 'HeadObjectCommand': {
        const found = bucket.get(key);
        if (found === undefined) throw new NotFound({ message: 'Not Found', $metadata: status(404) });
        return { ...OK, ContentLength: found.body.byteLength, ETag: found.etag, Metadata: found.metadata };
      }
      case 'DeleteObjectCommand':
        bucket.delete(key);
        return { ...status(204) };
      case 'DeleteObjectsCommand': {
        const objects = (input['Delete'] as { Objects?: { Key?: string }[] } | undefined)?.Objects ?? [];
        for (const o of objects) bucket.delete(String(o.Key));
        return { ...OK, Deleted: objects.map((o) => ({ Key: o.Key })) };
      }
      case 'ListObjectsV2Command':
        return { ...OK, ...listing(bucket, input) };
      default:
        throw new S3ServiceException({ name: 'NotImplemented', $fault: 'server', $metadata: status(501), message: `${command} is not faked` });
    }
  }

  private bucket(name: string): Map<string, StoredObject> {
    let bucket = this.buckets.get(name);
    if (bucket === undefined) this.buckets.set(name, (bucket = new Map()));
    return bucket;
  }
}

/**
 * Sees a call before the store: `apply` runs it. Throwing before `apply` is a request that never reached S3;
 * throwing after it, a response that was lost.
 */
export type S3Interceptor = (
  command: string,
  input: Record<string, unknown>,
  apply: () => Promise<Record<string, unknown>>,
) => Promise<Record<string, unknown>>;

interface StoredObject {
  readonly body: Uint8Array;
  readonly etag: string;
  readonly metadata: Record<string, string>;
}

const OK = { $metadata: status(200) };

function status(httpStatusCode: number): { httpStatusCode: number; attempts: number; totalRetryDelay: number } {
  return { httpStatusCode, attempts: 1, totalRetryDelay: 0 };
}

/** What S3 answers a conditional put on an existing key: 412, error code PreconditionFailed (no modelled class). */
function preconditionFailed(key: string): S3ServiceException {
  const error = new S3ServiceException({
    name: 'PreconditionFailed',
    $fault: 'client',
    $metadata: status(412),
    message: 'At least one of the pre-conditions you specified did not hold',
  });
  Object.assign(error, { Code: 'PreconditionFailed', Condition: 'If-None-Match', Key: key });
  return error;
}

/** A GetObject body: a stream that also has the SDK's `transformTo…` helpers. */
function streamOf(body: Uint8Array): Readable {
  const stream = Readable.from([Buffer.from(body)]);
  return Object.assign(stream, {
    transformToByteArray: async () => new Uint8Array(body),
    transformToString: async (encoding?: BufferEncoding) => Buffer.from(body).toString(encoding ?? 'utf8'),
  });
}

async function bytesOf(body: unknown): Promise<Uint8Array> {
  if (body === undefined) return new Uint8Array(0);
  if (typeof body === 'string') return new Uint8Array(Buffer.from(body, 'utf8'));
  if (body instanceof Uint8Array) return new Uint8Array(body);
  if (typeof body === 'object' && body !== null && Symbol.asyncIterator in body) {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer | string>) chunks.push(Buffer.from(chunk));
    return new Uint8Array(Buffer.concat(chunks));
  }
  throw new TypeError(`in-memory S3: cannot read a body of type ${typeof body}`);
}

/** One page of ListObjectsV2: keys after the continuation token, common prefixes folded as S3 folds them. */
function listing(bucket: Map<string, StoredObject>, input: Record<string, unknown>): Record<string, unknown> {
  const prefix = typeof input['Prefix'] === 'string' ? input['Prefix'] : '';
  const delimiter = typeof input['Delimiter'] === 'string' && input['Delimiter'] !== '' ? input['Delimiter'] : undefined;
  const maxKeys = typeof input['MaxKeys'] === 'number' ? input['MaxKeys'] : 1000;
  const after = typeof input['ContinuationToken'] === 'string' ? input['ContinuationToken'] : '';
  const entries: { key: string; prefix: boolean }[] = [];
  const seenPrefixes = new Set<string>();
  for (const key of [...bucket.keys()].sort()) {
    if (!key.startsWith(prefix)) continue;
    const cut = delimiter === undefined ? -1 : key.indexOf(delimiter, prefix.length);
    if (cut >= 0) {
      const common = key.slice(0, cut + (delimiter as string).length);
      if (!seenPrefixes.has(common)) {
        seenPrefixes.add(common);
        entries.push({ key: common, prefix: true });
      }
    } else entries.push({ key, prefix: false });
  }
  const rest = entries.filter((e) => e.key > after);
  const page = rest.slice(0, maxKeys);
  const truncated = rest.length > page.length;
  return {
    Contents: page.filter((e) => !e.prefix).map((e) => ({ Key: e.key, Size: bucket.get(e.key)?.body.byteLength ?? 0 })),
    CommonPrefixes: page.filter((e) => e.prefix).map((e) => ({ Prefix: e.key })),
    KeyCount: page.length,
    IsTruncated: truncated,
    ...(truncated ? { NextContinuationToken: page[page.length - 1]?.key } : {}),
  };
}
