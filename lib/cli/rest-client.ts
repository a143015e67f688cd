import { request } from 'node:http';
import { SluiceError } from '../core/index.ts';

/** A request to a job's REST API failed: unreachable, or answered with an error. */
export class RestRequestError extends SluiceError {
  constructor(
    message: string,
    /** HTTP status, when the API answered. */
    readonly status: number | undefined,
    cause?: unknown,
  ) {
    super('REST_REQUEST', message, { cause });
  }
}

function errorMessage(body: unknown): string | undefined {
  const error = (body as { error?: { message?: unknown } } | null)?.error;
  return typeof error?.message === 'string' ? error.message : undefined;
}

/**
 * Sends one request to the REST API at `base` (`http://127.0.0.1:<port>`) and returns the parsed JSON answer.
 * A POST carries an empty JSON object: the API refuses POSTs that are not application/json (a web page cannot send
 * those cross-origin). No timeout: a savepoint is answered only once complete, which can take as long as a
 * checkpoint may.
 */
export function requestJson(base: string, method: 'GET' | 'POST', path: string): Promise<unknown> {
  let url: URL;
  try {
    url = new URL(path, base);
  } catch (cause) {
    return Promise.reject(new RestRequestError(`not a URL: ${JSON.stringify(base)}`, undefined, cause));
  }
  return new Promise((resolve, reject) => {
    const body = method === 'POST' ? '{}' : undefined;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request(url, { method, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (cause) => reject(new RestRequestError(`the answer from ${url.href} broke off: ${cause.message}`, res.statusCode, cause)));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch (cause) {
          reject(new RestRequestError(`${method} ${url.href} answered ${res.statusCode} with something that is not JSON`, res.statusCode, cause));
          return;
        }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve(body);
        else reject(new RestRequestError(errorMessage(body) ?? `${method} ${url.href} answered ${status}`, status));
      });
    });
    req.on('error', (cause: NodeJS.ErrnoException) => {
      const why = cause.code === 'ECONNREFUSED' ? 'nothing listens there (has the job ended?)' : (cause.code ?? cause.message);
      reject(new RestRequestError(`cannot reach the REST API at ${url.origin}: ${why}`, undefined, cause));
    });
    req.end(body);
  });
}
