import { afterEach, describe, expect, it } from 'vitest';
import { defineJob } from '../../../lib/api/job.ts';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { runCli, type CliDeps } from '../../../lib/cli/run-cli.ts';
import type { WorkerLaunch } from '../../../lib/cli/worker-command.ts';

const job = defineJob({ name: 'totals', flags: { stream: { type: 'string', description: 'input stream', default: 'in' }, window: { type: 'number', integer: true, min: 1, description: 'window', default: 5 } }, build() {} });

function harness() {
  const h = { out: [] as string[], err: [] as string[], launches: [] as WorkerLaunch[], deps: undefined as unknown as CliDeps };
  h.deps = {
    version: '1.0.0',
    loadJob: async () => job,
    runJob: () => Promise.reject(new Error('sluice worker must not run the job embedded')),
    runWorker: async (launch) => {
      h.launches.push(launch);
      return ExitCode.ok;
    },
    stdout: (t) => void h.out.push(t),
    stderr: (t) => void h.err.push(t),
  };
  return h;
}

const REQUIRED = ['--job-id', 'j1', '--control-table', 'ctl', '--checkpoint-dir', 's3://bucket/chk', '--state-dir', '/mnt/efs/state'];
const ENV_KEYS = ['SLUICE_JOB_ID', 'SLUICE_CONTROL_TABLE', 'SLUICE_CHECKPOINT_DIR', 'SLUICE_STATE_DIR', 'SLUICE_MAX_SLOTS', 'SLUICE_CONTROL_POLL_MS'];

afterEach(() => {
  for (const k of ENV_KEYS) delete process.env[k];
});

describe('sluice worker', () => {
  it('passes the checked worker settings and job flags to the worker', async () => {
    const h = harness();
    const code = await runCli(['worker', 'job.ts', ...REQUIRED, '--max-slots', '3', '--control-poll-ms', '250', '--window', '7'], h.deps);
    expect(h.err.join('')).toBe('');
    expect(code).toBe(ExitCode.ok);
    expect(h.launches).toHaveLength(1);
    expect(h.launches[0]!.jobPath).toMatch(/job\.ts$/);
    expect(h.launches[0]!.jobFlags).toEqual({ stream: 'in', window: 7 });
    expect(h.launches[0]!.settings).toEqual({
      jobId: 'j1',
      controlTable: 'ctl',
      checkpointDir: 's3://bucket/chk',
      stateDir: '/mnt/efs/state',
      exchangeStream: undefined,
      maxSlots: 3,
      workerId: undefined,
      leaseDurationMs: 10_000,
      controlPollMs: 250,
    });
  });

  it('marks --lease-duration-ms as given only when it was (the stored duration is adopted otherwise)', async () => {
    const h = harness();
    expect(await runCli(['worker', 'job.ts', ...REQUIRED, '--lease-duration-ms', '30000'], h.deps)).toBe(ExitCode.ok);
    expect(await runCli(['worker', 'job.ts', ...REQUIRED, '--lease-duration-ms', '10000'], h.deps)).toBe(ExitCode.ok);
    expect(await runCli(['worker', 'job.ts', ...REQUIRED], h.deps)).toBe(ExitCode.ok);
    expect(h.launches.map((l) => [l.settings.leaseDurationMs, l.settings.leaseDurationMsGiven])).toEqual([
      [30_000, true],
      [10_000, true],
      [10_000, undefined],
    ]);
  });

  it('takes every flag from SLUICE_<FLAG> environment variables too', async () => {
    Object.assign(process.env, { SLUICE_JOB_ID: 'from-env', SLUICE_CONTROL_TABLE: 't', SLUICE_CHECKPOINT_DIR: 's3://b/p', SLUICE_STATE_DIR: '/s', SLUICE_MAX_SLOTS: '2' });
    const h = harness();
    expect(await runCli(['worker', 'job.ts'], h.deps)).toBe(ExitCode.ok);
    expect(h.launches[0]!.settings).toMatchObject({ jobId: 'from-env', controlTable: 't', checkpointDir: 's3://b/p', stateDir: '/s', maxSlots: 2 });
  });

  it.each([
    [['--control-table', 'ctl', '--checkpoint-dir', 's3://b/p', '--state-dir', '/s'], '--job-id'],
    [[...REQUIRED.slice(0, 6)], '--state-dir'],
    [[...REQUIRED, '--max-slots', 'many'], '--max-slots'],
    [[...REQUIRED, '--max-slots', '0'], '--max-slots'],
    [[...REQUIRED, '--control-poll-ms', '-5'], '--control-poll-ms'],
    [[...REQUIRED, '--lease-duration-ms', '1.5'], '--lease-duration-ms'],
    [['--job-id', 'j', '--control-table', 'c', '--checkpoint-dir', 'gs://b/p', '--state-dir', '/s'], '--checkpoint-dir'],
    [[...REQUIRED, '--window', '0'], '--window'],
    [[...REQUIRED, '--no-such-flag'], '--no-such-flag'],
  ])('exits 2 naming the bad flag (%j)', async (args, flag) => {
    const h = harness();
    const code = await runCli(['worker', 'job.ts', ...args], h.deps);
    expect(code).toBe(ExitCode.usage);
    expect(h.err.join('')).toContain(flag);
    expect(h.launches).toEqual([]);
  });

  it('lists the worker flags with their environment variables in --help', async () => {
    const h = harness();
    expect(await runCli(['worker', 'job.ts', '--help'], h.deps)).toBe(ExitCode.ok);
    const help = h.out.join('');
    for (const flag of ['--job-id', '--control-table', '--checkpoint-dir', '--state-dir', '--exchange-stream', '--max-slots', '--worker-id', '--lease-duration-ms', '--control-poll-ms', '--window']) {
      expect(help).toContain(flag);
    }
    expect(help).toContain('SLUICE_JOB_ID');
  });
});
