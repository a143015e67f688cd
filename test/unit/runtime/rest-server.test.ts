import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { JobNotRunningError, SavepointFailedError } from '../../../lib/runtime/control/control-errors.ts';
import { startRestServer, type RestServer } from '../../../lib/runtime/control/rest-server.ts';
import { FakeJobControl } from '../../harness/fake-job-control.ts';

const servers: RestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(job = new FakeJobControl()): Promise<{ job: FakeJobControl; url: string }> {
  const server = await startRestServer([job]);
  servers.push(server);
  return { job, url: server.url };
}

async function call(url: string, method = 'GET'): Promise<{ status: number; body: unknown; allow: string | null; type: string | null }> {
  const res = await fetch(url, { method });
  return { status: res.status, body: await res.json(), allow: res.headers.get('allow'), type: res.headers.get('content-type') };
}

describe('REST API', () => {
  it('listens on 127.0.0.1 at a free port by default', async () => {
    const { url } = await serve();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(url).port)).toBeGreaterThan(0);
  });

  it('lists jobs, and shows a job and its checkpoint history', async () => {
    const { url } = await serve();
    const jobs = await call(`${url}/jobs`);
    expect(jobs.status).toBe(200);
    expect(jobs.type).toMatch(/^application\/json/);
    expect(jobs.body).toEqual({ jobs: [{ id: 'job-1', name: 'totals', status: 'running' }] });
    const job = await call(`${url}/jobs/job-1`);
    expect(job.body).toMatchObject({ id: 'job-1', status: 'running', parallelism: 2, recordsRead: 1234, startTime: 1_700_000_000_000 });
    const history = await call(`${url}/jobs/job-1/checkpoints/`);
    expect(history.body).toEqual({ checkpoints: new FakeJobControl().history });
  });

  it('takes a savepoint and stops with one, answering with the path once done', async () => {
    const { job, url } = await serve();
    let release: () => void = () => {};
    job.next = () => new Promise((resolve) => (release = () => resolve({ checkpointId: 9, path: '/sp/savepoint-0000000009-1' })));
    const answer = call(`${url}/jobs/job-1/savepoints`, 'POST');
    await new Promise((r) => setTimeout(r, 30));
    release();
    expect(await answer).toMatchObject({ status: 200, body: { checkpointId: 9, path: '/sp/savepoint-0000000009-1' } });
    job.next = async () => ({ checkpointId: 10, path: '/sp/savepoint-0000000010-2' });
    expect(await call(`${url}/jobs/job-1/stop`, 'POST')).toMatchObject({ status: 200, body: { checkpointId: 10 } });
    expect(job.requests).toEqual(['savepoint', 'stop']);
  });

  it('answers 409 when the job cannot take a savepoint now, and 500 when the savepoint failed', async () => {
    const { job, url } = await serve();
    job.next = () => Promise.reject(new JobNotRunningError('cannot take a savepoint: the job is restarting'));
    expect(await call(`${url}/jobs/job-1/savepoints`, 'POST')).toMatchObject({
      status: 409,
      body: { error: { code: 'JOB_NOT_RUNNING', message: 'cannot take a savepoint: the job is restarting' } },
    });
    job.next = () => Promise.reject(new SavepointFailedError('savepoint (checkpoint 3) failed: task declined'));
    expect(await call(`${url}/jobs/job-1/stop`, 'POST')).toMatchObject({ status: 500, body: { error: { code: 'SAVEPOINT_FAILED' } } });
    job.next = () => Promise.reject(new Error('boom'));
    expect(await call(`${url}/jobs/job-1/savepoints`, 'POST')).toMatchObject({ status: 500, body: { error: { code: 'INTERNAL', message: 'boom' } } });
  });

  it('answers 404 for unknown jobs and paths, and 405 with Allow for a wrong method', async () => {
    const { job, url } = await serve();
    expect(await call(`${url}/jobs/nope`)).toMatchObject({ status: 404, body: { error: { code: 'JOB_NOT_FOUND' } } });
    expect(await call(`${url}/jobs/job-1/metrics`)).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
    expect(await call(`${url}/`)).toMatchObject({ status: 404 });
    expect(await call(`${url}/jobs/job-1/constructor`)).toMatchObject({ status: 404 });
    expect(await call(`${url}/jobs/job-1/savepoints`)).toMatchObject({ status: 405, allow: 'POST' });
    expect(await call(`${url}/jobs/job-1/stop`, 'DELETE')).toMatchObject({ status: 405, allow: 'POST' });
    expect(await call(`${url}/jobs`, 'POST')).toMatchObject({ status: 405, allow: 'GET' });
    expect(job.requests).toEqual([]);
  });

  it('refuses a port that is taken with a ConfigError naming the flag', async () => {
    const { url } = await serve();
    const port = Number(new URL(url).port);
    await expect(startRestServer([new FakeJobControl()], { port })).rejects.toThrow(ConfigError);
    await expect(startRestServer([new FakeJobControl()], { port })).rejects.toThrow(/--rest-port/);
  });

  it('stops accepting connections once closed', async () => {
    const server = await startRestServer([new FakeJobControl()]);
    await server.close();
    await expect(fetch(`${server.url}/jobs`)).rejects.toThrow();
  });
});
