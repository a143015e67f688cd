// The REST API of a running `sluice run`, as a web page or another user on the machine would meet it: forged
// requests are refused while the job keeps running, the job's files are private, and the real clients still work.
import { request } from 'node:http';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChild } from '../crash/crash-harness.ts';
import { restUrl, runSluice, waitFor } from '../integration/sluice-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-hardening-rest-'));
const started: { kill(): void }[] = [];
afterAll(() => {
  for (const s of started) s.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** Generous: the machine running the suite may be loaded. */
const WAIT_MS = 45_000;

/** One request with exactly these headers (node's fetch sets Host and Origin itself). */
function forge(
  url: string,
  options: { method?: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; code: string | undefined }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers, setHost: false, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { code?: string } };
          resolve({ status: res.statusCode ?? 0, code: body.error?.code });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe.skipIf(process.platform === 'win32')('sluice run: REST API baseline security', () => {
  it('refuses forged requests (foreign Host, text/plain or cross-origin POST, bad encoding) while the job keeps running; sluice savepoint and stop still work', async () => {
    const checkpointDir = join(dir, 'ck');
    const output = join(dir, 'out');
    // Far more events than the test waits for: the job only ends when stopped.
    const job = startChild([
      'run',
      'test/fixtures/jobs/throttled-window-counts.ts',
      '--output', output,
      '--events', '100000000',
      '--rate', '400',
      '--checkpoint-dir', checkpointDir,
      '--checkpoint-interval-ms', '200',
    ]);
    started.push(job);
    const url = await waitFor('rest.json', () => restUrl(checkpointDir), WAIT_MS);
    const host = new URL(url).host;
    const { jobs } = (await (await fetch(`${url}/jobs`)).json()) as { jobs: { id: string }[] };
    const id = jobs[0]!.id;

    // Private files: rest.json, the checkpoint folders and files.
    expect(mode(join(checkpointDir, 'rest.json'))).toBe('600');
    const checkpoint = await waitFor(
      'a complete checkpoint',
      () => readdirSync(checkpointDir).find((n) => /^chk-\d+$/.test(n) && readdirSync(join(checkpointDir, n)).includes('_metadata')),
      WAIT_MS,
    );
    expect(mode(checkpointDir)).toBe('700');
    expect(mode(join(checkpointDir, checkpoint))).toBe('700');
    for (const name of readdirSync(join(checkpointDir, checkpoint))) expect(mode(join(checkpointDir, checkpoint, name)), name).toBe('600');

    // DNS rebinding: a page on evil.example that re-pointed its name at 127.0.0.1.
    expect(await forge(url, { path: '/jobs', headers: { host: 'evil.example' } })).toEqual({ status: 403, code: 'FORBIDDEN_HOST' });
    expect(
      await forge(url, { method: 'POST', path: `/jobs/${id}/stop`, headers: { host: 'evil.example', 'content-type': 'application/json' }, body: '{}' }),
    ).toEqual({ status: 403, code: 'FORBIDDEN_HOST' });
    // CSRF: a "simple" cross-origin form post, and a JSON post that names its foreign origin.
    expect(
      await forge(url, { method: 'POST', path: `/jobs/${id}/stop`, headers: { host, origin: 'http://evil.example', 'content-type': 'text/plain' }, body: '{}' }),
    ).toEqual({ status: 403, code: 'FORBIDDEN_ORIGIN' });
    expect(await forge(url, { method: 'POST', path: `/jobs/${id}/stop`, headers: { host, 'content-type': 'text/plain' }, body: '{}' })).toEqual({
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    });
    expect(
      await forge(url, { method: 'POST', path: `/jobs/${id}/savepoints`, headers: { host, origin: 'null', 'content-type': 'application/json' }, body: '{}' }),
    ).toEqual({ status: 403, code: 'FORBIDDEN_ORIGIN' });
    expect(await forge(url, { path: '/jobs/%E0%A4%A', headers: { host } })).toEqual({ status: 400, code: 'BAD_REQUEST' });

    // Nothing of that reached the job.
    expect(job.child.exitCode).toBeNull();
    const details = (await (await fetch(`${url}/jobs/${id}`)).json()) as { status: string; savepointPath: string | null };
    expect(details).toMatchObject({ status: 'running', savepointPath: null });
    const history = (await (await fetch(`${url}/jobs/${id}/checkpoints`)).json()) as { checkpoints: { savepoint: boolean }[] };
    expect(history.checkpoints.some((c) => c.savepoint)).toBe(false);

    // The real clients send JSON and are served.
    const taken = await runSluice(['savepoint', '--checkpoint-dir', checkpointDir]);
    expect(taken.code, taken.stderr).toBe(0);
    const savepoint = taken.stdout.trim();
    expect(mode(savepoint)).toBe('700');
    for (const name of readdirSync(savepoint)) expect(mode(join(savepoint, name)), name).toBe('600');

    const stopped = await runSluice(['stop', '--checkpoint-dir', checkpointDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const run = await job.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`stopped with savepoint ${stopped.stdout.trim()}`);
  }, 150_000);
});
