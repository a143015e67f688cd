import { ConfigError } from '../core/index.ts';
import type { CheckpointView, JobOverview, SavepointView } from '../runtime/control/job-control.ts';
import { ExitCode } from './exit-codes.ts';
import { readRestEndpoint, restEndpointPath } from './rest-endpoint-file.ts';
import { isRemoteLocation } from '../runtime/restore/open-checkpoint-storage.ts';
import { RestRequestError, requestJson } from './rest-client.ts';

export type ControlCommand = 'checkpoints' | 'savepoint' | 'stop';

/** `sluice checkpoints|savepoint|stop` as parsed: where the job's REST API is, and which job. */
export interface ControlRequest {
  readonly command: ControlCommand;
  readonly url?: string | undefined;
  readonly port?: string | undefined;
  readonly checkpointDir?: string | undefined;
  readonly job?: string | undefined;
  readonly json?: boolean | undefined;
}

export interface ControlOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The REST API's base URL from --url, --port or --checkpoint-dir (its rest.json); exactly one must be given. */
async function baseUrl(request: ControlRequest): Promise<string> {
  const given = [request.url, request.port, request.checkpointDir].filter((v) => v !== undefined).length;
  if (given !== 1) {
    throw new ConfigError(
      `say where the job's REST API is with exactly one of --url URL, --port N or --checkpoint-dir DIR (the job's own), got ${given}`,
    );
  }
  if (request.url !== undefined) {
    if (!/^https?:\/\/[^/]+/.test(request.url)) throw new ConfigError(`--url must be like http://127.0.0.1:8081, got ${JSON.stringify(request.url)}`);
    return request.url;
  }
  if (request.port !== undefined) {
    const port = Number(request.port);
    if (!/^\d+$/.test(request.port) || port < 1 || port > 65535) throw new ConfigError(`--port must be a port number (1 to 65535), got ${JSON.stringify(request.port)}`);
    return `http://127.0.0.1:${port}`;
  }
  const dir = request.checkpointDir as string;
  if (isRemoteLocation(dir)) {
    throw new ConfigError(`--checkpoint-dir ${dir} is not a local folder: a job checkpointing to object storage records no REST endpoint file; use --url or --port`);
  }
  let endpoint;
  try {
    endpoint = await readRestEndpoint(dir);
  } catch (err) {
    throw new RestRequestError(`cannot read ${restEndpointPath(dir)}: ${err instanceof Error ? err.message : String(err)}`, undefined, err);
  }
  if (endpoint === undefined) {
    throw new RestRequestError(
      `no running job found: ${restEndpointPath(dir)} does not exist (is "sluice run ... --checkpoint-dir ${dir}" running?)`,
      undefined,
    );
  }
  if (!isAlive(endpoint.pid)) {
    throw new RestRequestError(`no running job found: the job that wrote ${restEndpointPath(dir)} (process ${endpoint.pid}) has ended`, undefined);
  }
  return endpoint.url;
}

/** The job to act on: --job, or the only job the API lists. */
async function pickJob(base: string, id: string | undefined): Promise<JobOverview> {
  const { jobs } = (await requestJson(base, 'GET', '/jobs')) as { jobs: JobOverview[] };
  if (id !== undefined) {
    const job = jobs.find((j) => j.id === id);
    if (job === undefined) throw new RestRequestError(`no job ${id} at ${base}; it runs ${jobs.map((j) => j.id).join(', ') || 'none'}`, 404);
    return job;
  }
  const [only, ...others] = jobs;
  if (only === undefined) throw new RestRequestError(`no job runs at ${base}`, undefined);
  if (others.length > 0) throw new ConfigError(`${jobs.length} jobs run at ${base}; choose one with --job (${jobs.map((j) => j.id).join(', ')})`);
  return only;
}

const pad = (rows: string[][]): string =>
  rows
    .map((row) => {
      const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
      return row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ').trimEnd();
    })
    .join('\n');

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The checkpoint history as a table, newest first. */
export function formatCheckpoints(job: JobOverview, checkpoints: readonly CheckpointView[]): string {
  const title = `job "${job.name}" (${job.id}), ${job.status}`;
  if (checkpoints.length === 0) return `${title}: no checkpoints yet\n`;
  const rows = [['ID', 'TYPE', 'STATUS', 'TRIGGERED', 'DURATION', 'SIZE', 'PATH / REASON']];
  for (const c of checkpoints) {
    rows.push([
      String(c.id),
      c.savepoint ? 'savepoint' : c.final ? 'final' : 'checkpoint',
      c.status,
      new Date(c.triggerTime).toISOString(),
      c.durationMs === null ? '-' : `${c.durationMs} ms`,
      size(c.sizeBytes),
      c.path ?? c.failureReason ?? '',
    ]);
  }
  return `${title}\n${pad(rows)}\n`;
}

/**
 * `sluice checkpoints` prints the checkpoint history; `sluice savepoint` takes a savepoint and prints its
 * directory; `sluice stop` stops the job with a savepoint and prints its directory. Exit codes: 0 done, 1 the
 * request failed (job unreachable, not running, savepoint failed), 2 bad usage.
 */
export async function runControlCommand(request: ControlRequest, out: ControlOutput): Promise<ExitCode> {
  try {
    const base = await baseUrl(request);
    const job = await pickJob(base, request.job);
    const jobPath = `/jobs/${encodeURIComponent(job.id)}`;
    let answer: unknown;
    switch (request.command) {
      case 'checkpoints': {
        answer = await requestJson(base, 'GET', `${jobPath}/checkpoints`);
        if (request.json !== true) out.stdout(formatCheckpoints(job, (answer as { checkpoints: CheckpointView[] }).checkpoints));
        break;
      }
      case 'savepoint':
      case 'stop': {
        answer = await requestJson(base, 'POST', `${jobPath}/${request.command === 'stop' ? 'stop' : 'savepoints'}`);
        const savepoint = answer as SavepointView;
        if (request.json !== true) {
          const what = request.command === 'stop' ? `stopped job "${job.name}" with savepoint` : `job "${job.name}": savepoint`;
          out.stderr(`${what} ${savepoint.checkpointId} written to ${savepoint.path}\n`);
          out.stdout(`${savepoint.path}\n`);
        }
        break;
      }
    }
    if (request.json === true) out.stdout(`${JSON.stringify(answer, null, 2)}\n`);
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof ConfigError) {
      out.stderr(`error: ${err.message}\n`);
      return ExitCode.usage;
    }
    if (err instanceof RestRequestError) {
      out.stderr(`error: ${err.message}\n`);
      return ExitCode.jobFailed;
    }
    throw err;
  }
}
