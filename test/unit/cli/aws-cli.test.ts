import { describe, expect, it } from 'vitest';
import { defineJob, type JobDefinition } from '../../../lib/api/job.ts';
import { runAwsCli, type AwsCliDeps } from '../../../lib/cli/aws-cli.ts';
import { envName } from '../../../lib/cli/aws-flags.ts';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { runCli } from '../../../lib/cli/run-cli.ts';
import type { ClusterConfigItem, RequestItem } from '../../../lib/cluster/control-items.ts';
import type { ClusterJobStatus } from '../../../lib/cluster/job-status.ts';
import { ClusterConfigConflictError, ClusterControlError, ClusterRequestFailedError } from '../../../lib/connectors/aws/cluster/job-admin-errors.ts';
import type { InitOptions, JobAdmin, StatusOptions, WaitOptions } from '../../../lib/connectors/aws/cluster/job-admin-table.ts';
import type { Source } from '../../../lib/connectors/source.ts';

const unbounded: Source<string> = {
  name: 'Lines',
  bounded: false,
  createSplits: () => [],
  createReader: () => {
    throw new TypeError('never read');
  },
};

const job = defineJob({
  name: 'lines',
  flags: { prefix: { type: 'string', default: '', description: 'prefix' } },
  build(env, flags) {
    env
      .fromSource(unbounded)
      .map((l) => flags.prefix + l, 'Prefix')
      .print();
  },
});

/** Records what the CLI asked of the control table; answers as scripted. */
class FakeAdmin implements JobAdmin {
  inits: { config: ClusterConfigItem; options: InitOptions | undefined }[] = [];
  requests: RequestItem[] = [];
  statusOptions: (StatusOptions | undefined)[] = [];
  waits: WaitOptions[] = [];
  closed = 0;
  initError: Error | undefined;
  answer: (request: RequestItem) => RequestItem | Error = (r) => ({ ...r, status: 'succeeded', result: { checkpointId: 4, path: `s3://b/p/savepoints/${r.id}` } });
  stored: ClusterConfigItem | undefined;

  async init(config: ClusterConfigItem, options?: InitOptions): Promise<'initialized' | 'unchanged'> {
    this.inits.push({ config, options });
    if (this.initError !== undefined) throw this.initError;
    const outcome = this.stored === undefined ? 'initialized' : 'unchanged';
    this.stored = config;
    return outcome;
  }

  async status(options?: StatusOptions): Promise<ClusterJobStatus> {
    this.statusOptions.push(options);
    return {
      jobId: 'j',
      config: this.stored,
      control: { leaseGeneration: 3, sinkCommittedThrough: 7, completed: { checkpointId: 7, metadataPath: 'chk-7/_metadata' } },
      coordinator: undefined,
      leases: [
        { slot: 0, owner: 'w1', epoch: 2, counter: 9, counterWatch: { watchedMs: 4000, moved: true } },
        { slot: 1, epoch: 1, counter: 3, counterWatch: { watchedMs: 4000, moved: false } },
      ],
      requests: [],
    };
  }

  async request(kind: RequestItem['kind'], id: string, requestedBy?: string): Promise<RequestItem> {
    const item: RequestItem = { id, kind, status: 'queued', requestedAt: 1, updatedAt: 1, ...(requestedBy === undefined ? {} : { requestedBy }) };
    this.requests.push(item);
    return item;
  }

  async waitForRequest(id: string, options?: WaitOptions): Promise<RequestItem> {
    this.waits.push(options ?? {});
    const request = this.requests.find((r) => r.id === id);
    if (request === undefined) throw new ClusterControlError(`no request ${id}`);
    const answered = this.answer(request);
    if (answered instanceof Error) throw answered;
    return answered;
  }

  close(): void {
    this.closed++;
  }
}

function harness(admin = new FakeAdmin(), definition: JobDefinition = job as JobDefinition) {
  const out: string[] = [];
  const err: string[] = [];
  const opened: { tableName: string; jobId: string }[] = [];
  const deps: AwsCliDeps = {
    version: '1.0.0',
    loadJob: async () => definition,
    stdout: (t) => void out.push(t),
    stderr: (t) => void err.push(t),
    openJobAdmin: (target) => {
      opened.push(target);
      return admin;
    },
    now: () => 50_000,
  };
  return { deps, admin, opened, out: () => out.join(''), err: () => err.join('') };
}

const INIT = ['init', 'job.ts', '--job-id', 'j', '--control-table', 't', '--checkpoint-dir', 's3://bucket/jobs/j', '--parallelism', '2'];

describe('sluice aws init', () => {
  it('writes the config item built from the slot plan and the flags, prints the layout, closes the table', async () => {
    const h = harness();
    const code = await runAwsCli([...INIT, '--checkpoint-interval-ms', '2000', '--restore', 's3://bucket/sp/1', '--prefix', '>'], h.deps);
    expect(h.err()).toContain('written to table t');
    expect(code).toBe(ExitCode.ok);
    expect(h.opened).toEqual([{ tableName: 't', jobId: 'j' }]);
    expect(JSON.parse(h.out())).toEqual({ slots: [{ slot: 0, keyGroups: [0, 63] }, { slot: 1, keyGroups: [64, 127] }], edges: [] });
    const [first] = h.admin.inits;
    expect(first?.options).toEqual({ fresh: false });
    expect(first?.config).toMatchObject({
      parallelism: 2,
      maxParallelism: 128,
      checkpointDir: 's3://bucket/jobs/j',
      restoreFrom: 's3://bucket/sp/1',
      checkpointing: { intervalMs: 2000, timeoutMs: 600_000, tolerableFailures: 3 },
      leaseDurationMs: 10_000,
      sinks: [],
      createdAt: 50_000,
    });
    expect(first?.config.tasks).toHaveLength(2);
    expect(first?.config.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(h.admin.closed).toBe(1);
  });

  it('stores --lease-duration-ms in the config for every worker; below 300 ms exits 2', async () => {
    const h = harness();
    expect(await runAwsCli([...INIT, '--lease-duration-ms', '30000'], h.deps)).toBe(ExitCode.ok);
    expect(h.admin.inits[0]?.config.leaseDurationMs).toBe(30_000);
    expect(await runAwsCli([...INIT, '--lease-duration-ms', '100'], h.deps)).toBe(ExitCode.usage);
    expect(h.err()).toContain('--lease-duration-ms');
    expect(h.admin.inits).toHaveLength(1);
  });

  it('a second init reports that nothing changed; --fresh is passed on', async () => {
    const h = harness();
    await runAwsCli(INIT, h.deps);
    expect(await runAwsCli([...INIT, '--fresh'], h.deps)).toBe(ExitCode.ok);
    expect(h.err()).toContain('nothing changed');
    expect(h.admin.inits[1]?.options).toEqual({ fresh: true });
  });

  it('exits 2 when the stored config has other settings, printing no layout', async () => {
    const h = harness();
    h.admin.initError = new ClusterConfigConflictError('job "j" is deployed with other settings (parallelism (P): stored 3, now 2). ... --fresh --restore <savepoint>', ['p']);
    expect(await runAwsCli(INIT, h.deps)).toBe(ExitCode.usage);
    expect(h.err()).toContain('--fresh --restore');
    expect(h.out()).toBe('');
  });

  it('exits 1 when the control table cannot be written', async () => {
    const h = harness();
    h.admin.initError = new ClusterControlError('cannot write config (ThrottlingException)', { retriable: true });
    expect(await runAwsCli(INIT, h.deps)).toBe(ExitCode.jobFailed);
    expect(h.err()).toContain('ThrottlingException');
  });

  it('--dry-run opens no table', async () => {
    const h = harness();
    expect(await runAwsCli([...INIT, '--dry-run'], h.deps)).toBe(ExitCode.ok);
    expect(h.opened).toEqual([]);
    expect(JSON.parse(h.out())).toHaveProperty('slots');
  });

  it('refuses a job flag that shadows a cluster flag', async () => {
    const clash = defineJob({ name: 'clash', flags: { jobId: { type: 'string', description: 'x' } }, build() {} });
    const h = harness(new FakeAdmin(), clash as JobDefinition);
    expect(await runAwsCli(INIT, h.deps)).toBe(ExitCode.usage);
    expect(h.err()).toContain('flag "jobId"');
  });

  it('is reached through runCli ("sluice aws ...")', async () => {
    const h = harness();
    const code = await runCli(['aws', ...INIT, '--dry-run'], { ...h.deps, runJob: () => Promise.reject(new TypeError('not run')) });
    expect(code).toBe(ExitCode.ok);
    expect(JSON.parse(h.out())).toHaveProperty('edges', []);
  });
});

describe('sluice aws status|savepoint|stop', () => {
  const TARGET = ['--job-id', 'j', '--control-table', 't'];

  it('status prints the leases with their counter watch, and --json the whole status', async () => {
    const h = harness();
    await runAwsCli(INIT, h.deps);
    const admin = h.admin;
    const text = harness(admin);
    expect(await runAwsCli(['status', ...TARGET], text.deps)).toBe(ExitCode.ok);
    expect(text.out()).toContain('job j: 2 slots');
    expect(text.out()).toContain('slot 0: owner w1, epoch 2, counter 9 (moved within 4.0 s)');
    expect(text.out()).toContain('slot 1: released, epoch 1, counter 3 (still for at least 4.0 s)');
    expect(text.out()).toContain('sinks committed through 7, lease generation 3');
    expect(admin.statusOptions[0]).toEqual({ watchLeasesMs: 4000 });
    const json = harness(admin);
    expect(await runAwsCli(['status', ...TARGET, '--json', '--watch-leases-ms', '0'], json.deps)).toBe(ExitCode.ok);
    expect((JSON.parse(json.out()) as ClusterJobStatus).leases).toHaveLength(2);
    expect(admin.statusOptions[1]).toEqual({ watchLeasesMs: 0 });
  });

  it('status of a job never initialized exits 1', async () => {
    const h = harness();
    expect(await runAwsCli(['status', ...TARGET], h.deps)).toBe(ExitCode.jobFailed);
    expect(h.out()).toContain('not initialized');
  });

  it('savepoint and stop put a request, wait with --timeout-ms and print the savepoint path', async () => {
    for (const kind of ['savepoint', 'stop'] as const) {
      const h = harness();
      expect(await runAwsCli([kind, ...TARGET, '--timeout-ms', '1234'], h.deps)).toBe(ExitCode.ok);
      const [request] = h.admin.requests;
      expect(request?.kind).toBe(kind);
      expect(request?.id).toMatch(new RegExp(`^${kind}-50000-`));
      expect(h.admin.waits).toEqual([{ timeoutMs: 1234 }]);
      expect(h.out()).toBe(`s3://b/p/savepoints/${request?.id}\n`);
    }
  });

  it('a failed or unanswered request exits 1 with the reason', async () => {
    const failed = harness();
    failed.admin.answer = () => new ClusterRequestFailedError('savepoint request "x" failed: a slot declined');
    expect(await runAwsCli(['savepoint', ...TARGET], failed.deps)).toBe(ExitCode.jobFailed);
    expect(failed.err()).toContain('error: sluice aws savepoint: savepoint request "x" failed: a slot declined');
    const late = harness();
    late.admin.answer = () => new ClusterControlError('still queued after 10 ms');
    expect(await runAwsCli(['stop', ...TARGET], late.deps)).toBe(ExitCode.jobFailed);
    expect(late.err()).toContain('still queued');
  });

  it('bad usage exits 2 naming the flag; flags come from SLUICE_<FLAG> too', async () => {
    const h = harness();
    expect(await runAwsCli(['savepoint', '--job-id', 'j'], h.deps)).toBe(ExitCode.usage);
    expect(h.err()).toContain('missing required flag --control-table');
    expect(await runAwsCli(['stop', ...TARGET, '--timeout-ms', '0'], h.deps)).toBe(ExitCode.usage);
    expect(h.err()).toContain('--timeout-ms must be an integer >= 1');
    expect(envName('controlTable')).toBe('SLUICE_CONTROL_TABLE');
    const saved = { job: process.env['SLUICE_JOB_ID'], table: process.env['SLUICE_CONTROL_TABLE'] };
    process.env['SLUICE_JOB_ID'] = 'from-env';
    process.env['SLUICE_CONTROL_TABLE'] = 'table-env';
    try {
      const e = harness();
      expect(await runAwsCli(['savepoint'], e.deps)).toBe(ExitCode.ok);
      expect(e.opened).toEqual([{ tableName: 'table-env', jobId: 'from-env' }]);
    } finally {
      for (const [name, value] of [['SLUICE_JOB_ID', saved.job], ['SLUICE_CONTROL_TABLE', saved.table]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
