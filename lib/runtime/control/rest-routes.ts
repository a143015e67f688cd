import { SluiceError } from '../../core/index.ts';
import { JobNotRunningError, SavepointFailedError } from './control-errors.ts';
import type { JobControl } from './job-control.ts';

/** An answer of the REST API: an HTTP status and a JSON body. */
export interface RestResponse {
  readonly status: number;
  readonly body: unknown;
  /** Methods the path accepts, for 405 answers. */
  readonly allow?: readonly string[];
}

/** The body of every error answer. */
export interface RestErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}

export function restError(status: number, code: string, message: string, allow?: readonly string[]): RestResponse {
  const body: RestErrorBody = { error: { code, message } };
  return allow === undefined ? { status, body } : { status, body, allow };
}

/** 409 for a job that cannot do it now, 500 for a savepoint that failed or an unexpected error. */
function failure(err: unknown): RestResponse {
  if (err instanceof JobNotRunningError) return restError(409, err.code, err.message);
  if (err instanceof SavepointFailedError) return restError(500, err.code, err.message);
  const code = err instanceof SluiceError ? err.code : 'INTERNAL';
  return restError(500, code, err instanceof Error ? err.message : String(err));
}

type RouteName = 'job' | 'checkpoints' | 'savepoints' | 'stop';

type Route = { readonly method: string; readonly name: RouteName; readonly run: (job: JobControl) => Promise<unknown> | unknown };

/** Sub-resources of `/jobs/:id`; '' is the job itself. */
const JOB_ROUTES: Readonly<Record<string, Route>> = {
  '': { method: 'GET', name: 'job', run: (job) => job.details() },
  checkpoints: { method: 'GET', name: 'checkpoints', run: (job) => ({ checkpoints: job.checkpoints() }) },
  savepoints: { method: 'POST', name: 'savepoints', run: (job) => job.triggerSavepoint() },
  stop: { method: 'POST', name: 'stop', run: (job) => job.stopWithSavepoint() },
};

/** A savepoint or stop request being answered. */
interface InFlightSavepoint {
  readonly request: string;
  /** Epoch ms when it arrived. */
  readonly since: number;
}

/** Answers one request: method and request target (path and query) in, status and JSON body out. */
export type RestRouter = (method: string, target: string) => Promise<RestResponse>;

/** Names the savepoint request in flight, with the checkpoint it took if the job shows one in progress. */
function inFlightMessage(job: JobControl, inFlight: InFlightSavepoint, now: number): string {
  const checkpoint = job.checkpoints().find((c) => c.savepoint && c.status === 'in-progress');
  const taking = checkpoint === undefined ? '' : ` (savepoint ${checkpoint.id}, in progress)`;
  const age = ((now - inFlight.since) / 1000).toFixed(1);
  return `job ${job.id} is already answering ${inFlight.request}, received ${age} s ago${taking}; one savepoint request at a time: wait for its answer, then ask again`;
}

/**
 * The router of a server (docs/rest-api.md):
 *   GET  /jobs                      { jobs: JobOverview[] }
 *   GET  /jobs/:id                  JobDetails
 *   GET  /jobs/:id/checkpoints      { checkpoints: CheckpointView[] }, newest first
 *   POST /jobs/:id/savepoints       SavepointView, once the savepoint is complete
 *   POST /jobs/:id/stop             SavepointView, once the sinks committed it; then the job ends
 * At most one savepoint or stop request per job is in flight: each is answered only once done, and every one
 * queued would hold a connection and take another savepoint; a second one is answered 409 at once.
 */
export function createRouter(jobs: readonly JobControl[], clock: () => number = Date.now): RestRouter {
  const savepointsInFlight = new Map<JobControl, InFlightSavepoint>();
  return async (method, target) => {
    let pathname: string;
    let parts: string[];
    try {
      pathname = new URL(target, 'http://127.0.0.1').pathname;
      parts = pathname.split('/').filter((p) => p !== '').map((p) => decodeURIComponent(p));
    } catch {
      return restError(400, 'BAD_REQUEST', `cannot parse the request target ${JSON.stringify(target)} (malformed percent-encoding?)`);
    }
    if (parts[0] !== 'jobs' || parts.length > 3) return restError(404, 'NOT_FOUND', `no resource ${pathname}; try GET /jobs`);
    if (parts.length === 1) {
      if (method !== 'GET') return restError(405, 'METHOD_NOT_ALLOWED', `${method} ${pathname} is not supported; use GET`, ['GET']);
      return { status: 200, body: { jobs: jobs.map((j) => j.overview()) } };
    }
    const sub = parts[2] ?? '';
    const handler = Object.hasOwn(JOB_ROUTES, sub) ? JOB_ROUTES[sub] : undefined;
    if (handler === undefined) return restError(404, 'NOT_FOUND', `no resource ${pathname}`);
    const job = jobs.find((j) => j.id === parts[1]);
    if (job === undefined) return restError(404, 'JOB_NOT_FOUND', `no job with id ${parts[1]}; GET /jobs lists the jobs`);
    if (method !== handler.method) {
      return restError(405, 'METHOD_NOT_ALLOWED', `${method} ${pathname} is not supported; use ${handler.method}`, [handler.method]);
    }
    const savepoint = handler.name === 'savepoints' || handler.name === 'stop';
    if (savepoint) {
      const inFlight = savepointsInFlight.get(job);
      if (inFlight !== undefined) return restError(409, 'SAVEPOINT_IN_PROGRESS', inFlightMessage(job, inFlight, clock()));
      savepointsInFlight.set(job, { request: `${method} ${pathname}`, since: clock() });
    }
    try {
      return { status: 200, body: await handler.run(job) };
    } catch (err) {
      return failure(err);
    } finally {
      if (savepoint) savepointsInFlight.delete(job);
    }
  };
}
