import type { IncomingHttpHeaders } from 'node:http';
import { restError, type RestResponse } from './rest-routes.ts';

/**
 * The REST API has no authentication: it relies on listening on the loopback interface. A web page in the user's
 * browser can still reach loopback, so the checks here keep a page from acting on a job:
 *  - DNS rebinding: a page on evil.example re-points its name at 127.0.0.1; its requests then carry
 *    `Host: evil.example`. Only the names the server is really reached by are accepted.
 *  - CSRF: a page may send a "simple" cross-origin POST (text/plain, no preflight). A browser always sends an
 *    `Origin` with those, and cannot send `Content-Type: application/json` cross-origin without a preflight this
 *    server never approves; so a POST must be application/json and, if it says where it comes from, same-origin.
 */

/** Where the server listens: the address it is bound to and its port. */
export interface BoundAddress {
  readonly host: string;
  readonly port: number;
}

/** Host names that mean the bound address: the address itself (IPv6 in brackets, as in a Host header) and localhost. */
function hostNames(bound: BoundAddress): string[] {
  return [bound.host.includes(':') ? `[${bound.host}]` : bound.host, 'localhost'];
}

/** `name[:port]` of a Host header, or undefined when it is not of that form (userinfo, path, garbage). */
function parseHost(host: string): { name: string; port: string | undefined } | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
  if (match === null) return undefined;
  return { name: match[1]!.toLowerCase(), port: match[2] };
}

function hostAllowed(host: string | undefined, bound: BoundAddress): boolean {
  if (host === undefined) return false;
  const parsed = parseHost(host);
  if (parsed === undefined || !hostNames(bound).includes(parsed.name)) return false;
  // Without a port the Host means port 80; accepted, since a rebinding page would still name its own host.
  return parsed.port === undefined || Number(parsed.port) === bound.port;
}

/** The origins a same-origin page (e.g. a console served by this server) would send. */
function sameOrigins(bound: BoundAddress): string[] {
  return hostNames(bound).map((name) => `http://${name}:${bound.port}`);
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The refusal of a request that a web page could have forged, or undefined when it may be routed: 403 for a Host
 * other than the bound address or localhost (with or without the port), 403 for a request other than GET or HEAD
 * whose `Origin` is present and not this server's, 415 for a POST whose Content-Type is not application/json.
 */
export function refuseForgedRequest(method: string, headers: IncomingHttpHeaders, bound: BoundAddress): RestResponse | undefined {
  const host = header(headers, 'host');
  if (!hostAllowed(host, bound)) {
    const allowed = hostNames(bound).map((n) => `${n}:${bound.port}`).join(' or ');
    return restError(
      403,
      'FORBIDDEN_HOST',
      `requests must be addressed to ${allowed}, not ${host === undefined ? 'without a Host header' : `Host ${JSON.stringify(host)}`} (a web page may be trying to reach the job through DNS rebinding)`,
    );
  }
  if (method === 'GET' || method === 'HEAD') return undefined;
  const origin = header(headers, 'origin');
  if (origin !== undefined && !sameOrigins(bound).includes(origin.toLowerCase())) {
    return restError(
      403,
      'FORBIDDEN_ORIGIN',
      `cross-origin requests are refused: Origin ${JSON.stringify(origin)} is not ${sameOrigins(bound).join(' or ')}`,
    );
  }
  // Only POST reaches a handler with a body; other methods are answered 405 by the router.
  if (method !== 'POST') return undefined;
  const type = header(headers, 'content-type');
  const mediaType = type?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    return restError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      `POST requests must have Content-Type: application/json (a JSON body such as {}), got ${type === undefined ? 'none' : JSON.stringify(type)}`,
    );
  }
  return undefined;
}
