import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineJob } from '../../../lib/api/job.ts';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { writeRestEndpoint } from '../../../lib/cli/rest-endpoint-file.ts';
import { runCli, type CliDeps } from '../../../lib/cli/run-cli.ts';
import { JobNotRunningError } from '../../../lib/runtime/control/control-errors.ts';
import { startRestServer, type RestServer } from '../../../lib/runtime/control/rest-server.ts';
import type { JobResult } from '../../../lib/runtime/job-result.ts';
import type { ThreadedRunOptions } from '../../../lib/runtime/threads/thread-runner.ts';
import { FakeJobControl } from '../../harness/fake-job-control.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sluice-cli-control-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const servers: RestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const job = defineJob({ name: 'totals', flags: {}, build() {} });

interface Harness {
  deps: CliDeps;
  out: string[];
  err: string[];
}

function harness(runJob?: (options: ThreadedRunOptions) => Promise<JobResult>): Harness {
  const h: Harness = { out: [], err: [], deps: undefined as unknown as CliDeps };
  h.deps = {
    version: '1.0.0',
    loadJob: async () => job,
    runJob: runJob ?? (async () => ({ durationMs: 1000, sourceRecords: 10, droppedLateRecords: 0, tasks: [] })),
    stdout: (t) => void h.out.push(t),
    stderr: (t) => void h.err.push(t),
  };
  return h;
}

async function serve(control = new FakeJobControl()): Promise<{ control: FakeJobControl; server: RestServer }> {
  const server = await startRestServer([control]);
  servers.push(server);
  return { control, server };
}

const text = (chunks: string[]) => chunks.join('');

describe('sluice checkpoints / savepoint / stop', () => {
  it('prints the checkpoint history of the job at --port', async () => {
    const { server } = await serve();
    const h = harness();
    expect(await runCli(['checkpoints', '--port', String(server.port)], h.deps)).toBe(ExitCode.ok);
    const out = text(h.out);
    expect(out).toContain('job "totals" (job-1), running');
    expect(out).toMatch(/^ID\s+TYPE\s+STATUS\s+TRIGGERED\s+DURATION\s+SIZE\s+PATH \/ REASON$/m);
    expect(out).toMatch(/^7\s+savepoint\s+completed\s+2023-11-14T22:13:20\.000Z\s+12 ms\s+4\.0 KiB\s+\/savepoints\/savepoint-0000000007-1700000000000$/m);
    expect(out).toMatch(/^6\s+checkpoint\s+failed\s+.*checkpoint 6 expired$/m);
  });

  it('prints the JSON answer with --json', async () => {
    const { control, server } = await serve();
    const h = harness();
    expect(await runCli(['checkpoints', '--url', server.url, '--json'], h.deps)).toBe(ExitCode.ok);
    expect(JSON.parse(text(h.out))).toEqual({ checkpoints: control.history });
  });

  it('takes a savepoint and prints its directory on stdout', async () => {
    const { control, server } = await serve();
    const h = harness();
    expect(await runCli(['savepoint', '--url', server.url], h.deps)).toBe(ExitCode.ok);
    expect(text(h.out)).toBe('/savepoints/savepoint-0000000007-1700000000000\n');
    expect(text(h.err)).toContain('job "totals": savepoint 7 written to /savepoints/savepoint-0000000007-1700000000000');
    expect(control.requests).toEqual(['savepoint']);
  });

  it('stops the job found through --checkpoint-dir, and picks a job with --job', async () => {
    const { control, server } = await serve(new FakeJobControl('totals', 'abc'));
    const dir = tempDir();
    await writeRestEndpoint(dir, { url: server.url, pid: process.pid, jobId: 'abc', jobName: 'totals', startTime: 1 });
    const h = harness();
    expect(await runCli(['stop', '--checkpoint-dir', dir, '--job', 'abc'], h.deps)).toBe(ExitCode.ok);
    expect(text(h.out)).toBe('/savepoints/savepoint-0000000007-1700000000000\n');
    expect(text(h.err)).toContain('stopped job "totals" with savepoint 7');
    expect(control.requests).toEqual(['stop']);
    const other = harness();
    expect(await runCli(['stop', '--checkpoint-dir', dir, '--job', 'zzz'], other.deps)).toBe(ExitCode.jobFailed);
    expect(text(other.err)).toContain('no job zzz');
  });

  it('exits 1 with the API message when the job cannot do it', async () => {
    const { control, server } = await serve();
    control.next = () => Promise.reject(new JobNotRunningError('cannot stop the job with a savepoint: the job takes no checkpoints (run it with --checkpoint-dir)'));
    const h = harness();
    expect(await runCli(['stop', '--port', String(server.port)], h.deps)).toBe(ExitCode.jobFailed);
    expect(text(h.err)).toBe('error: cannot stop the job with a savepoint: the job takes no checkpoints (run it with --checkpoint-dir)\n');
    expect(text(h.out)).toBe('');
  });

  it('exits 1 when no job is reachable', async () => {
    const server = await startRestServer([new FakeJobControl()]);
    await server.close();
    const h = harness();
    expect(await runCli(['checkpoints', '--port', String(server.port)], h.deps)).toBe(ExitCode.jobFailed);
    expect(text(h.err)).toMatch(/cannot reach the REST API at http:\/\/127\.0\.0\.1:\d+: nothing listens there/);

    const dir = tempDir();
    const missing = harness();
    expect(await runCli(['savepoint', '--checkpoint-dir', dir], missing.deps)).toBe(ExitCode.jobFailed);
    expect(text(missing.err)).toContain(`no running job found: ${join(dir, 'rest.json')} does not exist`);

    // A rest.json left by a process that is gone.
    await writeRestEndpoint(dir, { url: server.url, pid: 2 ** 22 + 12345, jobId: 'x', jobName: 'x', startTime: 1 });
    const stale = harness();
    expect(await runCli(['savepoint', '--checkpoint-dir', dir], stale.deps)).toBe(ExitCode.jobFailed);
    expect(text(stale.err)).toContain('has ended');
  });

  it('exits 2 for bad usage', async () => {
    const none = harness();
    expect(await runCli(['stop'], none.deps)).toBe(ExitCode.usage);
    expect(text(none.err)).toContain('exactly one of --url URL, --port N or --checkpoint-dir DIR');
    const two = harness();
    expect(await runCli(['stop', '--port', '8081', '--url', 'http://127.0.0.1:8081'], two.deps)).toBe(ExitCode.usage);
    const badPort = harness();
    expect(await runCli(['savepoint', '--port', '70000'], badPort.deps)).toBe(ExitCode.usage);
    expect(text(badPort.err)).toContain('--port must be a port number');
    const badUrl = harness();
    expect(await runCli(['savepoint', '--url', 'localhost'], badUrl.deps)).toBe(ExitCode.usage);
    const unknown = harness();
    expect(await runCli(['checkpoints', '--port', '1', '--bogus'], unknown.deps)).toBe(ExitCode.usage);
  });

  it('lists the commands in sluice --help', async () => {
    const h = harness();
    expect(await runCli(['--help'], h.deps)).toBe(ExitCode.ok);
    const help = text(h.out);
    expect(help).toMatch(/checkpoints \[options\]\s+list the checkpoints and savepoints of a running job/);
    expect(help).toMatch(/savepoint \[options\]\s+take a savepoint of a running job/);
    expect(help).toMatch(/stop \[options\]\s+stop a running job with a savepoint/);
  });
});

describe('sluice run and its REST API', () => {
  it('serves the REST API while the job runs, records it in <checkpoint-dir>/rest.json, and removes both at the end', async () => {
    const dir = tempDir();
    const control = new FakeJobControl();
    let seen: { jobs: unknown; endpoint: unknown } | undefined;
    const h = harness(async (options) => {
      await options.onStart?.(control);
      const url = /REST API on (http:\/\/127\.0\.0\.1:\d+)/.exec(text(h.err))?.[1] as string;
      seen = {
        jobs: await (await fetch(`${url}/jobs`)).json(),
        endpoint: JSON.parse(readFileSync(join(dir, 'rest.json'), 'utf8')),
      };
      return { durationMs: 1000, sourceRecords: 10, droppedLateRecords: 0, tasks: [], stoppedWithSavepoint: '/ck/savepoints/savepoint-0000000004-9' };
    });
    expect(await runCli(['run', 'job.ts', '--checkpoint-dir', dir], h.deps)).toBe(ExitCode.ok);
    expect(seen?.jobs).toEqual({ jobs: [{ id: 'job-1', name: 'totals', status: 'running' }] });
    expect(seen?.endpoint).toMatchObject({ pid: process.pid, jobId: 'job-1', jobName: 'totals' });
    expect(existsSync(join(dir, 'rest.json'))).toBe(false);
    expect(text(h.err)).toContain('sluice: job "totals" stopped with savepoint /ck/savepoints/savepoint-0000000004-9: 10 records read');
  });

  it('passes --restore and --savepoint-dir to the runner, and refuses them without --checkpoint-dir', async () => {
    const runs: ThreadedRunOptions[] = [];
    const h = harness(async (options) => {
      runs.push(options);
      return { durationMs: 1, sourceRecords: 0, droppedLateRecords: 0, tasks: [] };
    });
    const args = ['run', 'job.ts', '--checkpoint-dir', 'ck', '--restore', 'ck/savepoints/sp', '--savepoint-dir', 'sps'];
    expect(await runCli(args, h.deps)).toBe(ExitCode.ok);
    expect(runs[0]?.checkpointing).toMatchObject({ dir: 'ck', restore: 'ck/savepoints/sp', savepointDir: 'sps' });
    for (const [flag, value] of [
      ['--restore', 'sp'],
      ['--savepoint-dir', 'sps'],
    ]) {
      const bad = harness();
      expect(await runCli(['run', 'job.ts', flag!, value!], bad.deps)).toBe(ExitCode.usage);
      expect(text(bad.err)).toContain(`${flag} needs --checkpoint-dir`);
    }
    const port = harness();
    expect(await runCli(['run', 'job.ts', '--rest-port', '65536'], port.deps)).toBe(ExitCode.usage);
    expect(text(port.err)).toContain('--rest-port must be a port number');
  });
});
