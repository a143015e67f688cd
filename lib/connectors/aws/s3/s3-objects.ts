import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  paginateListObjectsV2,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { S3RequestError } from './s3-errors.ts';
import { objectKey, s3Url, type S3Location } from './s3-location.ts';

/** How large objects are uploaded. */
export interface UploadSettings {
  /** Bytes per part of a multipart upload; smaller bodies go up in one PutObject. */
  readonly partSizeBytes: number;
  /** Parts uploaded at once (each buffered in memory). */
  readonly queueSize: number;
}

/** The user metadata key under which objects carry their hex SHA-256 (`x-amz-meta-sha256`). */
const SHA256_METADATA = 'sha256';
/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

function isNotFound(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

/** An S3 conditional write lost: the object exists (412) or another conditional write is in progress (409). */
export function isPreconditionFailed(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: number } };
  return e.name === 'PreconditionFailed' || e.$metadata?.httpStatusCode === 412;
}

/**
 * The S3 operations checkpoint storage needs, on storage-relative paths under one location. SDK errors pass
 * through unchanged (callers wrap them with what they were doing); a missing object is `undefined`, not an error.
 */
export class S3Objects {
  constructor(
    readonly client: S3Client,
    readonly location: S3Location,
    private readonly upload: UploadSettings,
  ) {}

  key(path: string): string {
    return objectKey(this.location, path);
  }

  url(path?: string): string {
    return s3Url(this.location, path);
  }

  async getBytes(path: string): Promise<Uint8Array | undefined> {
    return this.unlessMissing(async () => {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.key(path) }));
      if (out.Body === undefined) return new Uint8Array(0);
      return await out.Body.transformToByteArray();
    });
  }

  async head(path: string): Promise<{ bytes: number; sha256: string | undefined } | undefined> {
    return this.unlessMissing(async () => {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.key(path) }));
      return { bytes: out.ContentLength ?? 0, sha256: out.Metadata?.[SHA256_METADATA] };
    });
  }

  /** Uploads bytes, in parts when larger than the part size. */
  async putBytes(path: string, data: Uint8Array, sha256?: string): Promise<void> {
    await this.uploadBody(path, Buffer.from(data.buffer, data.byteOffset, data.byteLength), sha256);
  }

  /** Streams a local file up, in parts when larger than the part size. */
  async putFile(path: string, localPath: string, sha256: string): Promise<void> {
    await this.uploadBody(path, createReadStream(localPath, { highWaterMark: 1024 * 1024 }), sha256);
  }

  /**
   * One PutObject that S3 refuses when the key exists (`If-None-Match: *`); the loser sees `isPreconditionFailed`.
   * S3-compatible servers that ignore the header (s3rver) overwrite instead.
   */
  async putIfAbsent(path: string, data: Uint8Array, sha256?: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.location.bucket,
        Key: this.key(path),
        Body: data,
        IfNoneMatch: '*',
        ...(sha256 === undefined ? {} : { Metadata: { [SHA256_METADATA]: sha256 } }),
      }),
    );
  }

  /** Size and SHA-256 of an object's bytes, streamed; undefined when it does not exist. */
  async hash(path: string): Promise<{ bytes: number; sha256: string } | undefined> {
    const body = await this.openBody(path);
    if (body === undefined) return undefined;
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      bytes += buf.length;
      hash.update(buf);
    }
    return { bytes, sha256: hash.digest('hex') };
  }

  /**
   * Streams an object into `localPath` (through a temporary file beside it, renamed when complete) and returns
   * what was written; undefined when the object does not exist.
   */
  async download(path: string, localPath: string): Promise<{ bytes: number; sha256: string } | undefined> {
    const body = await this.openBody(path);
    if (body === undefined) return undefined;
    await mkdir(dirname(localPath), { recursive: true });
    const temp = `${localPath}.download-${randomBytes(4).toString('hex')}`;
    const hash = createHash('sha256');
    let bytes = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    try {
      await pipeline(body, meter, createWriteStream(temp));
      await rename(temp, localPath);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    return { bytes, sha256: hash.digest('hex') };
  }

  /** Names of the "folders" directly under `dir` ('' for the location's root), e.g. `chk-0000000001`. */
  async listFolders(dir: string): Promise<string[]> {
    const prefix = this.folderPrefix(dir);
    const names: string[] = [];
    const pages = paginateListObjectsV2({ client: this.client }, { Bucket: this.location.bucket, Prefix: prefix, Delimiter: '/' });
    for await (const page of pages) {
      for (const common of page.CommonPrefixes ?? []) {
        if (common.Prefix !== undefined) names.push(common.Prefix.slice(prefix.length, -1));
      }
    }
    return names;
  }

  /** Storage-relative paths of every object under `dir`, at any depth. */
  async listPaths(dir: string): Promise<string[]> {
    return (await this.listObjects(dir)).map((o) => o.path);
  }

  /** Every object under `dir`, at any depth, with when it was last written (epoch ms). */
  async listObjects(dir: string): Promise<{ path: string; modifiedAt: number }[]> {
    const prefix = this.folderPrefix(dir);
    const rootLength = this.location.prefix === '' ? 0 : this.location.prefix.length + 1;
    const found: { path: string; modifiedAt: number }[] = [];
    const pages = paginateListObjectsV2({ client: this.client }, { Bucket: this.location.bucket, Prefix: prefix });
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (object.Key !== undefined) found.push({ path: object.Key.slice(rootLength), modifiedAt: object.LastModified?.getTime() ?? 0 });
      }
    }
    return found;
  }

  async deleteOne(path: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.key(path) }));
  }

  /** Deletes objects (missing ones are fine); throws when S3 reports a key it could not delete. */
  async deleteMany(paths: readonly string[]): Promise<void> {
    for (let i = 0; i < paths.length; i += DELETE_BATCH) {
      const batch = paths.slice(i, i + DELETE_BATCH);
      const out = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.location.bucket,
          Delete: { Objects: batch.map((p) => ({ Key: this.key(p) })), Quiet: true },
        }),
      );
      const failed = out.Errors?.[0];
      if (failed !== undefined) {
        throw new S3RequestError(`S3 did not delete ${failed.Key ?? '?'}: ${failed.Code ?? ''} ${failed.Message ?? ''}`.trim());
      }
    }
  }

  /** `call`'s result, or undefined when S3 says the object does not exist. */
  private async unlessMissing<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private async openBody(path: string): Promise<Readable | undefined> {
    return this.unlessMissing(async () => {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.key(path) }));
      return out.Body as Readable;
    });
  }

  private folderPrefix(dir: string): string {
    const key = dir === '' ? this.location.prefix : this.key(dir);
    return key === '' ? '' : `${key}/`;
  }

  private async uploadBody(path: string, body: Buffer | Readable, sha256: string | undefined): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.location.bucket,
        Key: this.key(path),
        Body: body,
        ...(sha256 === undefined ? {} : { Metadata: { [SHA256_METADATA]: sha256 } }),
      },
      partSize: this.upload.partSizeBytes,
      queueSize: this.upload.queueSize,
    });
    await upload.done();
  }
}
