import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../../core/index.ts';
import type { JobControl } from './job-control.ts';
import { refuseForgedRequest, type BoundAddress } from './rest-guard.ts';
import { createRouter, type RestResponse, type RestRouter } from './rest-routes.ts';

/**
 * The REST API listens on the loopback interface only: it can stop jobs, and has no authentication. Requests a web
 * page could forge (foreign Host, cross-origin or non-JSON POST) are refused (rest-guard.ts).
 */
export const REST_HOST = '127.0.0.1';

/** How long `close` lets requests in flight finish before it cuts their connections. */
const CLOSE_GRACE_MS = 1000;

export interface RestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops listening; requests in flight get a moment to finish. */
  close(): Promise<void>;
}

function send(res: ServerResponse, answer: RestResponse): void {
  const text = `${JSON.stringify(answer.body, null, 2)}\n`;
  res.statusCode = answer.status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  // One request per connection: nothing idle keeps the server (or the job's process) open.
  res.setHeader('connection', 'close');
  if (answer.allow !== undefined) res.setHeader('allow', answer.allow.join(', '));
  res.end(text);
}

async function handle(router: RestRouter, bound: BoundAddress, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Request bodies carry nothing the API reads; drain them so the connection stays well-formed.
  req.resume();
  const method = req.method ?? 'GET';
  let answer: RestResponse;
  try {
    answer = refuseForgedRequest(method, req.headers, bound) ?? (await router(method, req.url ?? '/'));
  } catch (err) {
    answer = { status: 500, body: { error: { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) } } };
  }
  if (!res.destroyed) send(res, answer);
}

/**
 * Serves the REST API of `jobs` on 127.0.0.1 (docs/rest-api.md), with node:http. Port 0 picks a free port. A port
 * that cannot be bound is a ConfigError.
 */
export async function startRestServer(jobs: readonly JobControl[], options: { port?: number } = {}): Promise<RestServer> {
  const port = options.port ?? 0;
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`the REST port must be an integer between 0 and 65535, got ${port}`);
  }
  const router = createRouter(jobs);
  // The port is known once bound; requests arrive only after that.
  const bound = { host: REST_HOST, port };
  const server = createServer((req, res) => void handle(router, bound, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new ConfigError(
          `cannot serve the REST API on ${REST_HOST}:${port}: ${err.code ?? err.message}; pass another --rest-port, or 0 for any free port`,
          { cause: err },
        ),
      );
    });
    server.listen(port, REST_HOST, () => resolve());
  });
  // Neither the server nor its connections may keep a finished job's process alive.
  server.unref();
  bound.port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${REST_HOST}:${bound.port}`,
    port: bound.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        cut.unref();
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closed;
    },
  };
}
