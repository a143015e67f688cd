import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export interface S3Emulator {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Client overrides for the emulator: its endpoint, a region and the credentials it accepts. */
  readonly clientConfig: {
    readonly endpoint: string;
    readonly region: string;
    readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  /** A client for the test itself (path-style addressing, which s3rver needs). */
  readonly client: S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

interface S3rverOptions {
  address: string;
  port: number;
  silent: boolean;
  directory: string;
  allowMismatchedSignatures?: boolean;
}

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}

// s3rver ships no types; it is a CommonJS class.
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: S3rverOptions) => S3rverInstance;

/**
 * Starts s3rver in this process on 127.0.0.1 and a free port, storing objects in a fresh temporary folder that
 * `stop` deletes. Its gaps (TOOLING.md): conditional puts are ignored, AbortMultipartUpload answers 405, and
 * paginated listings (continuation tokens) need Node's OpenSSL legacy provider, so tests keep each listing under
 * 1000 keys; listings with a delimiter never paginate on s3rver.
 */
export async function startS3Emulator(options: { buckets?: readonly string[] } = {}): Promise<S3Emulator> {
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const directory = await mkdtemp(join(tmpdir(), 'sluice-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const clientConfig = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } };
  const client = new S3Client({ ...clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
  const createBucket = async (name: string): Promise<void> => {
    await client.send(new CreateBucketCommand({ Bucket: name }));
  };
  for (const bucket of options.buckets ?? []) await createBucket(bucket);
  return {
    endpoint,
    clientConfig,
    client,
    createBucket,
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
