import { request } from 'node:http';
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
  const init: RequestInit = method === 'GET' ? { method } : { method, headers: { 'content-type': 'application/json' }, body: '{}' };
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json(), allow: res.headers.get('allow'), type: res.headers.get('content-type') };
}

/** Waits until the job got `count` savepoint or stop requests (a generous bound: the machine may be loaded). */
async function untilRequested(job: FakeJobControl, count: number): Promise<void> {
  for (let i = 0; i < 2000 && job.requests.length < count; i++) await new Promise((r) => setTimeout(r, 10));
}

/**
 * One request with exactly the headers given (fetch would set Host and Origin itself), as a browser page or a
 * rebinding attack could send it; the request target is sent as is, without normalising its encoding.
 */
function raw(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers ?? {}, setHost: false, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
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
    await untilRequested(job, 1);
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

  describe('refuses requests a web page could forge', () => {
    const json = { 'content-type': 'application/json' };

    it('answers 403 to a Host other than the bound address or localhost (DNS rebinding), and runs nothing', async () => {
      const { job, url } = await serve();
      const port = new URL(url).port;
      for (const host of ['evil.example', `evil.example:${port}`, '127.0.0.1.evil.example', `localhost:${Number(port) + 1}`, `x@127.0.0.1:${port}`]) {
        const answer = await raw(url, { path: '/jobs', headers: { host } });
        expect(answer, host).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN_HOST' } } });
        expect(answer.body.error?.message).toContain(JSON.stringify(host));
      }
      const stop = await raw(url, { method: 'POST', path: '/jobs/job-1/stop', headers: { host: 'evil.example', ...json }, body: '{}' });
      expect(stop.status).toBe(403);
      expect(job.requests).toEqual([]);
    });

    it('answers the bound address and localhost, with or without the port, in any case', async () => {
      const { url } = await serve();
      const port = new URL(url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost:${port}`, '127.0.0.1', 'localhost']) {
        expect((await raw(url, { path: '/jobs', headers: { host } })).status, host).toBe(200);
      }
    });

    it('answers 403 to a POST with a foreign Origin, and 415 to a POST that is not application/json (CSRF)', async () => {
      const { job, url } = await serve();
      const host = new URL(url).host;
      const foreign = await raw(url, { method: 'POST', path: '/jobs/job-1/stop', headers: { host, origin: 'http://evil.example', ...json }, body: '{}' });
      expect(foreign).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN_ORIGIN' } } });
      const opaque = await raw(url, { method: 'POST', path: '/jobs/job-1/stop', headers: { host, origin: 'null', ...json }, body: '{}' });
      expect(opaque.status).toBe(403);
      const textPlain = await raw(url, { method: 'POST', path: '/jobs/job-1/stop', headers: { host, 'content-type': 'text/plain' }, body: '{}' });
      expect(textPlain).toMatchObject({ status: 415, body: { error: { code: 'UNSUPPORTED_MEDIA_TYPE' } } });
      expect(textPlain.body.error?.message).toContain('"text/plain"');
      const form = await raw(url, { method: 'POST', path: '/jobs/job-1/savepoints', headers: { host, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
      expect(form.status).toBe(415);
      const none = await raw(url, { method: 'POST', path: '/jobs/job-1/savepoints', headers: { host } });
      expect(none.status).toBe(415);
      expect(job.requests).toEqual([]);
      // Same origin, JSON: served.
      const same = await raw(url, { method: 'POST', path: '/jobs/job-1/savepoints', headers: { host, origin: url, 'content-type': 'application/json; charset=utf-8' }, body: '{}' });
      expect(same.status).toBe(200);
      expect(job.requests).toEqual(['savepoint']);
    });

    it('answers 400, not 500, to malformed percent-encoding in the path', async () => {
      const { url } = await serve();
      const host = new URL(url).host;
      for (const path of ['/jobs/%E0%A4%A', '/jobs/%E0%A4%A/checkpoints', '/jobs/%']) {
        expect(await raw(url, { path, headers: { host } }), path).toMatchObject({ status: 400, body: { error: { code: 'BAD_REQUEST' } } });
      }
    });
  });

  it('answers 409 to a second savepoint or stop request while one is in flight, naming it; then takes the next', async () => {
    const { job, url } = await serve();
    job.history = [{ ...job.history[0]!, id: 8, status: 'in-progress', durationMs: null, path: null }];
    let release: () => void = () => {};
    job.next = () => new Promise((resolve) => (release = () => resolve({ checkpointId: 8, path: '/sp/savepoint-0000000008-1' })));
    const first = call(`${url}/jobs/job-1/savepoints`, 'POST');
    await untilRequested(job, 1);
    expect(job.requests).toEqual(['savepoint']);
    for (const path of ['savepoints', 'stop']) {
      const second = await call(`${url}/jobs/job-1/${path}`, 'POST');
      expect(second).toMatchObject({ status: 409, body: { error: { code: 'SAVEPOINT_IN_PROGRESS' } } });
      const message = (second.body as { error: { message: string } }).error.message;
      expect(message).toContain('POST /jobs/job-1/savepoints');
      expect(message).toContain('savepoint 8');
    }
    expect(job.requests).toEqual(['savepoint']);
    release();
    expect(await first).toMatchObject({ status: 200, body: { checkpointId: 8 } });
    job.next = async () => ({ checkpointId: 9, path: '/sp/savepoint-0000000009-2' });
    expect(await call(`${url}/jobs/job-1/stop`, 'POST')).toMatchObject({ status: 200, body: { checkpointId: 9 } });
    // A failed request frees the slot too.
    job.next = () => Promise.reject(new JobNotRunningError('cannot take a savepoint: the job is restarting'));
    expect((await call(`${url}/jobs/job-1/savepoints`, 'POST')).status).toBe(409);
    job.next = async () => ({ checkpointId: 10, path: '/sp/savepoint-0000000010-3' });
    expect((await call(`${url}/jobs/job-1/savepoints`, 'POST')).status).toBe(200);
  });
});
