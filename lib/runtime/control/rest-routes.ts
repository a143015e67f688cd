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

function error(status: number, code: string, message: string, allow?: readonly string[]): RestResponse {
  const body: RestErrorBody = { error: { code, message } };
  return allow === undefined ? { status, body } : { status, body, allow };
}

/** 409 for a job that cannot do it now, 500 for a savepoint that failed or an unexpected error. */
function failure(err: unknown): RestResponse {
  if (err instanceof JobNotRunningError) return error(409, err.code, err.message);
  if (err instanceof SavepointFailedError) return error(500, err.code, err.message);
  const code = err instanceof SluiceError ? err.code : 'INTERNAL';
  return error(500, code, err instanceof Error ? err.message : String(err));
}

type Route = { readonly method: string; readonly run: (job: JobControl) => Promise<unknown> | unknown };

/** Sub-resources of `/jobs/:id`; '' is the job itself. */
const JOB_ROUTES: Readonly<Record<string, Route>> = {
  '': { method: 'GET', run: (job) => job.details() },
  checkpoints: { method: 'GET', run: (job) => ({ checkpoints: job.checkpoints() }) },
  savepoints: { method: 'POST', run: (job) => job.triggerSavepoint() },
  stop: { method: 'POST', run: (job) => job.stopWithSavepoint() },
};

/**
 * Answers one request (docs/rest-api.md):
 *   GET  /jobs                      { jobs: JobOverview[] }
 *   GET  /jobs/:id                  JobDetails
 *   GET  /jobs/:id/checkpoints      { checkpoints: CheckpointView[] }, newest first
 *   POST /jobs/:id/savepoints       SavepointView, once the savepoint is complete
 *   POST /jobs/:id/stop             SavepointView, once the sinks committed it; then the job ends
 */
export async function route(jobs: readonly JobControl[], method: string, target: string): Promise<RestResponse> {
  let pathname: string;
  try {
    pathname = new URL(target, 'http://127.0.0.1').pathname;
  } catch {
    return error(400, 'BAD_REQUEST', `cannot parse the request target ${JSON.stringify(target)}`);
  }
  const parts = pathname.split('/').filter((p) => p !== '').map((p) => decodeURIComponent(p));
  if (parts[0] !== 'jobs' || parts.length > 3) return error(404, 'NOT_FOUND', `no resource ${pathname}; try GET /jobs`);
  if (parts.length === 1) {
    if (method !== 'GET') return error(405, 'METHOD_NOT_ALLOWED', `${method} ${pathname} is not supported; use GET`, ['GET']);
    return { status: 200, body: { jobs: jobs.map((j) => j.overview()) } };
  }
  const sub = parts[2] ?? '';
  const handler = Object.hasOwn(JOB_ROUTES, sub) ? JOB_ROUTES[sub] : undefined;
  if (handler === undefined) return error(404, 'NOT_FOUND', `no resource ${pathname}`);
  const job = jobs.find((j) => j.id === parts[1]);
  if (job === undefined) return error(404, 'JOB_NOT_FOUND', `no job with id ${parts[1]}; GET /jobs lists the jobs`);
  if (method !== handler.method) {
    return error(405, 'METHOD_NOT_ALLOWED', `${method} ${pathname} is not supported; use ${handler.method}`, [handler.method]);
  }
  try {
    return { status: 200, body: await handler.run(job) };
  } catch (err) {
    return failure(err);
  }
}
