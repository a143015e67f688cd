// An HTTP proxy in front of one emulator (kinesalite, s3rver or DynamoDB Local) that counts every call passing
// through it into an AwsCallCounts: the local cluster points every process's endpoint (workers, the CLI, the
// coordinator's clients) at it, so the counts cover separate processes without touching product code. DynamoDB data
// calls get `ReturnConsumedCapacity: TOTAL` added (DynamoDB Local does not check signatures), so that the answer
// carries the units; the caller's SDK ignores the extra field.
import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countDynamoDbCall, countKinesisCall, countS3Request, type AwsCallCounts } from './aws-call-counts.ts';
import { jsonTargetAction, withConsumedCapacity } from './aws-request-classes.ts';

export type ProxiedService = 'dynamodb' | 's3' | 'kinesis';

export interface CountingProxy {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
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

// Hop-by-hop headers and the ones this proxy recomputes (it buffers whole bodies).
const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'expect', 'host']);

function passHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !DROPPED.has(k.toLowerCase())));
}

function forward(agent: Agent, target: URL, method: string, path: string, headers: IncomingHttpHeaders, body: Buffer): Promise<Forwarded> {
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: target.hostname, port: target.port, method, path, headers: { ...passHeaders(headers), host: target.host, 'content-length': String(body.length) } },
      (res) => {
        readBody(res).then((b) => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: b }), reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Starts a proxy on 127.0.0.1 (a free port) forwarding to `targetEndpoint` and counting `service` calls into `counts`. */
export async function startCountingProxy(service: ProxiedService, targetEndpoint: string, counts: AwsCallCounts): Promise<CountingProxy> {
  const target = new URL(targetEndpoint);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const server: Server = createServer((req, res) => {
    void (async () => {
      let body = await readBody(req);
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      const action = jsonTargetAction(req.headers);
      const parsed = service === 's3' ? undefined : parseJson(body);
      if (service === 'dynamodb' && action !== undefined) {
        const changed = withConsumedCapacity(action, parsed);
        if (changed !== undefined) body = Buffer.from(JSON.stringify(changed), 'utf8');
      }
      if (service === 's3') countS3Request(counts, method, url, req.headers);
      if (service === 'kinesis' && action !== undefined) countKinesisCall(counts, action, parsed);
      const out = await forward(agent, target, method, url, req.headers, body);
      if (service === 'dynamodb' && action !== undefined) {
        countDynamoDbCall(counts, action, parsed, out.status, out.headers['content-encoding'] === undefined ? parseJson(out.body) : undefined);
      }
      // A HEAD answer's content-length is the object's size (HeadObject reads it), not the empty body's.
      const length = method === 'HEAD' ? out.headers['content-length'] : String(out.body.length);
      res.writeHead(out.status, { ...passHeaders(out.headers), ...(length === undefined ? {} : { 'content-length': length }) });
      res.end(out.body);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}
