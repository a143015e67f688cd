// An HTTP proxy in front of a Kinesis endpoint (kinesalite) that makes one shard slow to deliver its first records,
// as a shard on a busy or throttled Kinesis can be: the first GetShardIterator call for that shard is held back
// until every other shard has been read to its tip (a GetRecords answer without records), so the job has run well
// past any idleness timeout with that shard unanswered. Used by `sluice run` child processes through
// AWS_ENDPOINT_URL_KINESIS.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SlowKinesisProxy {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Whether the held call has been let through. */
  released(): boolean;
  stop(): Promise<void>;
}

interface Forwarded {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

async function readBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function forward(target: URL, method: string, path: string, headers: IncomingHttpHeaders, body: Buffer): Promise<Forwarded> {
  return new Promise((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, method, path, headers: { ...headers, host: target.host } }, (res) => {
      readBody(res).then((b) => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: b }), reject);
    });
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * Holds the first GetShardIterator of `slowShardId` until a GetRecords call of another shard came back empty at
 * the tip, or `maxHoldMs` passed (so that a broken job cannot hang the test).
 */
export async function startSlowKinesisProxy(targetEndpoint: string, slowShardId: string, maxHoldMs = 60_000): Promise<SlowKinesisProxy> {
  const target = new URL(targetEndpoint);
  let release!: () => void;
  const tipReached = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  let letThrough = false;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const action = String(req.headers['x-amz-target'] ?? '').split('.').pop();
      if (action === 'GetShardIterator' && !held) {
        const shardId = (JSON.parse(body.toString('utf8')) as { ShardId?: string }).ShardId;
        if (shardId === slowShardId) {
          held = true;
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([tipReached, new Promise<void>((resolve) => (timer = setTimeout(resolve, maxHoldMs)))]);
          clearTimeout(timer);
          letThrough = true;
        }
      }
      const out = await forward(target, req.method ?? 'POST', req.url ?? '/', req.headers, body);
      if (action === 'GetRecords' && out.status === 200) {
        const records = (JSON.parse(out.body.toString('utf8')) as { Records?: unknown[] }).Records ?? [];
        if (records.length === 0) release();
      }
      res.writeHead(out.status, out.headers);
      res.end(out.body);
    })().catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    released: () => letThrough,
    stop: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
