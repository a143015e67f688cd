import { ConfigError } from '../../../core/index.ts';

/** A bucket and a key prefix ("folder") in it; storage-relative paths are joined onto the prefix with '/'. */
export interface S3Location {
  readonly bucket: string;
  /** Without leading or trailing '/'; '' for the bucket's root. */
  readonly prefix: string;
}

/** `s3://bucket/prefix` plus optional query parameters (`?commitTable=…&commitMode=…`). */
export interface ParsedS3Uri extends S3Location {
  readonly params: ReadonlyMap<string, string>;
}

const URI = /^s3:\/\/([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/;
// General-purpose bucket names (dots allowed); the SDK rejects others with a less helpful message.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function checkBucketName(bucket: string, context: string): string {
  if (!BUCKET.test(bucket) || bucket.includes('..')) {
    throw new ConfigError(`${context}: "${bucket}" is not a valid S3 bucket name (3-63 characters: a-z, 0-9, '.', '-')`);
  }
  return bucket;
}

/** Normalises a key prefix: no leading or trailing '/', and no empty, '.' or '..' segments. */
export function normalizePrefix(prefix: string, context: string): string {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return '';
  for (const segment of trimmed.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new ConfigError(`${context}: the key prefix "${prefix}" has an empty, '.' or '..' segment`);
    }
  }
  return trimmed;
}

/** Parses `s3://bucket[/prefix][?name=value&…]`; ConfigError when malformed. */
export function parseS3Uri(uri: string): ParsedS3Uri {
  const m = URI.exec(uri);
  if (m === null) {
    throw new ConfigError(`"${uri}" is not an S3 location; expected s3://bucket/prefix (e.g. s3://my-bucket/jobs/orders)`);
  }
  const bucket = checkBucketName(m[1] ?? '', `S3 location "${uri}"`);
  let path: string;
  try {
    path = decodeURIComponent(m[2] ?? '');
  } catch (cause) {
    throw new ConfigError(`S3 location "${uri}": the key prefix is not valid percent-encoding`, { cause });
  }
  const prefix = normalizePrefix(path, `S3 location "${uri}"`);
  const params = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(m[3] ?? '')) {
    if (params.has(name)) throw new ConfigError(`S3 location "${uri}": parameter "${name}" is given twice`);
    params.set(name, value);
  }
  return { bucket, prefix, params };
}

/** The object key of a storage-relative path. */
export function objectKey(location: S3Location, path: string): string {
  return location.prefix === '' ? path : `${location.prefix}/${path}`;
}

/** `s3://bucket/key`, for messages. */
export function s3Url(location: S3Location, path?: string): string {
  const key = path === undefined ? location.prefix : objectKey(location, path);
  return key === '' ? `s3://${location.bucket}` : `s3://${location.bucket}/${key}`;
}
