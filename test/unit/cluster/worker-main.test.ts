import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { WORKER_DEFAULTS, type WorkerLaunch } from '../../../lib/cli/worker-command.ts';
import { buildJob as buildEnv } from '../../../lib/runtime/load-job.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import type { ClusterConfigItem } from '../../../lib/cluster/control-items.ts';
import { clusterFingerprint } from '../../../lib/graph/slot-plan.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { runWorker } from '../../../functions/worker/main.ts';
import { ConfigError } from '../../../lib/core/index.ts';
import { leaseDurationFor } from '../../../lib/runtime/cluster/stored-config-check.ts';
import { InMemoryControlTable, InMemoryLeaseKeeper } from '../../harness/cluster/in-memory-control.ts';
import job, { fixtureFeeds } from './fixture-job.ts';
import { clusterConfig, keysOfSlot, MAX_P, P, tempDir, until } from './slot-fixtures.ts';

const jobPath = fileURLToPath(new URL('./fixture-job.ts', import.meta.url));

function launch(checkpointDir: string, settings: Partial<WorkerLaunch['settings']> = {}): WorkerLaunch {
  return {
    jobPath,
    jobFlags: {},
    settings: {
      jobId: 'job-1',
      controlTable: 'control',
      checkpointDir,
      stateDir: tempDir('sluice-main-state-'),
      exchangeStream: undefined,
      maxSlots: undefined,
      workerId: 'w1',
      leaseDurationMs: WORKER_DEFAULTS.leaseDurationMs,
      controlPollMs: 10,
      ...settings,
    },
  };
}

/** The config `sluice aws init` would store for the fixture job (its slot plan's fingerprint). */
async function deployedConfig(checkpointDir: string): Promise<ClusterConfigItem> {
  const env = await buildEnv(job, {}, { parallelism: P, maxParallelism: MAX_P });
  const plan = buildPhysicalPlan(env.graph, env.options);
  const config = clusterConfig(plan, checkpointDir);
  return { ...config, fingerprint: clusterFingerprint(plan, P, config.edges) };
}

async function runAgainst(config: ClusterConfigItem, checkpointDir: string, settings: Partial<WorkerLaunch['settings']> = {}): Promise<{ code: ExitCode; err: string }> {
  const table = new InMemoryControlTable();
  table.config = config;
  const err: string[] = [];
  const keeper = new InMemoryLeaseKeeper('w1', table);
  let sigterm: () => void = () => {};
  const exit = runWorker(launch(checkpointDir, settings), {
    stdout: () => {},
    stderr: (t) => void err.push(t),
    adapters: () => Promise.resolve({ control: table, acks: table, leases: keeper }),
    store: new FsObjectStore(checkpointDir),
    tempRoot: tempDir('sluice-main-temp-'),
    stopSignal: new Promise((resolve) => (sigterm = resolve)),
  });
  // A worker that accepted the config starts taking leases: stop it, the test fails below.
  let exited = false;
  const took = until(() => keeper.listening || exited, 'the worker to take leases').then(() => sigterm(), () => undefined);
  const code = await exit;
  exited = true;
  await took;
  expect(keeper.listening).toBe(false);
  return { code, err: err.join('') };
}

describe('functions/worker runWorker', () => {
  it('exits 2 naming both fingerprints when the job is not the deployed one', async () => {
    const dir = tempDir('sluice-main-store-');
    const config = { ...(await deployedConfig(dir)), fingerprint: 'f'.repeat(64) };
    const { code, err } = await runAgainst(config, dir);
    expect(code).toBe(ExitCode.usage);
    expect(err).toMatch(/fingerprint is [0-9a-f]{12}, the stored config's ffffffffffff/);
  });

  it('exits 2 naming both locations when --checkpoint-dir is not the deployed one', async () => {
    const dir = tempDir('sluice-main-store-');
    const config = await deployedConfig(`${dir}-other/`);
    const { code, err } = await runAgainst(config, dir);
    expect(code).toBe(ExitCode.usage);
    expect(err).toContain(`--checkpoint-dir is ${JSON.stringify(dir)} but the job was deployed with ${JSON.stringify(`${dir}-other/`)}`);
  });

  it('prints one JSON line per event, runs slots on RocksDB, and exits 0 after SIGTERM with its leases released', async () => {
    const store = new FsObjectStore(tempDir('sluice-main-store-'));
    const table = new InMemoryControlTable();
    table.config = await deployedConfig(store.location);
    const keeper = new InMemoryLeaseKeeper('w1', table);
    const out: string[] = [];
    let sigterm: () => void = () => {};
    const exit = runWorker(launch(store.location), {
      stdout: (t) => void out.push(t),
      stderr: (t) => void out.push(`stderr: ${t}`),
      adapters: () => Promise.resolve({ control: table, acks: table, leases: keeper }),
      store,
      tempRoot: tempDir('sluice-main-temp-'),
      stopSignal: new Promise((resolve) => (sigterm = resolve)),
    });
    const events = () => out.join('').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>);
    await until(() => keeper.listening, 'the worker to take leases');
    keeper.grant(0);
    keeper.grant(1);
    await until(() => events().filter((e) => e['event'] === 'slot-started').length === 2, 'both slots to start');
    fixtureFeeds.rows[0]!.push({ k: keysOfSlot(0, 1)[0]!, v: 3 });
    table.trigger(1);
    await until(() => events().filter((e) => e['event'] === 'ack').length === 2, 'two acks');
    sigterm();
    expect(await exit).toBe(ExitCode.ok);
    const names = events().map((e) => `${String(e['event'])}${e['slot'] === undefined ? '' : ` ${String(e['slot'])}`}`);
    expect(names.filter((n) => n.startsWith('lease-acquired'))).toEqual(['lease-acquired 0', 'lease-acquired 1']);
    expect(names.filter((n) => n.startsWith('released')).sort()).toEqual(['released 0', 'released 1']);
    expect(events().find((e) => e['event'] === 'slot-started')).toMatchObject({ restore: 'fresh', epoch: 1 });
    expect(typeof events()[0]!['at']).toBe('string');
    expect(keeper.closed).toBe(true);
    expect([...table.leases.values()].map((l) => l.owner)).toEqual([undefined, undefined]);
  });

  it('logs a failed lease round as a warning event (not swallowed)', async () => {
    const store = new FsObjectStore(tempDir('sluice-main-store-'));
    const table = new InMemoryControlTable();
    table.config = await deployedConfig(store.location);
    const keeper = new InMemoryLeaseKeeper('w1', table);
    const out: string[] = [];
    let sigterm: () => void = () => {};
    let leaseError: ((error: unknown) => void) | undefined;
    const exit = runWorker(launch(store.location), {
      stdout: (t) => void out.push(t),
      stderr: () => {},
      adapters: (_id, onLeaseError) => {
        leaseError = onLeaseError;
        return Promise.resolve({ control: table, acks: table, leases: keeper });
      },
      store,
      tempRoot: tempDir('sluice-main-temp-'),
      stopSignal: new Promise((resolve) => (sigterm = resolve)),
    });
    await until(() => keeper.listening, 'the worker to take leases');
    const denied = Object.assign(new Error('User is not authorized to perform: dynamodb:Query'), { name: 'AccessDeniedException' });
    leaseError?.(denied);
    sigterm();
    expect(await exit).toBe(ExitCode.ok);
    const warnings = out.join('').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e['event'] === 'warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!['message']).toBe('lease round failed (tried again at the next round): AccessDeniedException: User is not authorized to perform: dynamodb:Query');
  });

  it('exits 2 naming both lease durations when --lease-duration-ms was given and differs from the stored one', async () => {
    const dir = tempDir('sluice-main-store-');
    const config = { ...(await deployedConfig(dir)), leaseDurationMs: 30_000 };
    const { code, err } = await runAgainst(config, dir, { leaseDurationMs: 10_000, leaseDurationMsGiven: true });
    expect(code).toBe(ExitCode.usage);
    expect(err).toContain('--lease-duration-ms is 10000 but the job was deployed with a lease duration of 30000 ms');
  });

  it('exits 2 naming init when the job was never deployed', async () => {
    const table = new InMemoryControlTable();
    const err: string[] = [];
    const code = await runWorker(launch(tempDir('sluice-main-store-')), {
      stdout: () => {},
      stderr: (t) => void err.push(t),
      adapters: () => Promise.resolve({ control: table, acks: table, leases: new InMemoryLeaseKeeper('w1', table) }),
      stopSignal: new Promise(() => {}),
    });
    expect(code).toBe(ExitCode.usage);
    expect(err.join('')).toMatch(/sluice aws init/);
  });
});

describe('leaseDurationFor', () => {
  it('adopts the stored duration unless the flag was given; a given flag must match it', () => {
    expect(leaseDurationFor({ leaseDurationMs: 30_000 }, { leaseDurationMs: 10_000 })).toBe(30_000);
    expect(leaseDurationFor({ leaseDurationMs: 30_000 }, { leaseDurationMs: 30_000, leaseDurationMsGiven: true })).toBe(30_000);
    expect(() => leaseDurationFor({ leaseDurationMs: 30_000 }, { leaseDurationMs: 10_000, leaseDurationMsGiven: true })).toThrow(ConfigError);
    // A config written before the duration was stored: the worker's own value.
    expect(leaseDurationFor({}, { leaseDurationMs: 4000, leaseDurationMsGiven: true })).toBe(4000);
  });
});
