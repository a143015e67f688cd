import { describe, expect, it } from 'vitest';
import { runSluice } from './sluice-process.ts';

// `sluice aws init --dry-run` needs no AWS at all: these child processes get no endpoint and no credentials.
const JOB = 'test/fixtures/jobs/cluster-layout-job.ts';
const NO_AWS: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('SLUICE_')));
const BASE = ['aws', 'init', JOB, '--job-id', 'j', '--control-table', 't', '--checkpoint-dir', 's3://bucket/prefix', '--dry-run'];

describe('sluice aws init --dry-run (child process)', () => {
  it('prints the slot plan as one JSON document and exits 0', async () => {
    const run = await runSluice([...BASE, '--parallelism', '3', '--max-parallelism', '12', '--exchange-stream', 'ex'], NO_AWS);
    expect(run.stderr).toContain('dry run of job "cluster-layout": 3 slots');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      slots: [
        { slot: 0, keyGroups: [0, 3] },
        { slot: 1, keyGroups: [4, 7] },
        { slot: 2, keyGroups: [8, 11] },
      ],
      edges: [{ id: '0', mode: 'exchange' }],
    });
  }, 60_000);

  it('takes the cluster flags from SLUICE_<FLAG> variables', async () => {
    const env = { ...NO_AWS, SLUICE_JOB_ID: 'j', SLUICE_CONTROL_TABLE: 't', SLUICE_CHECKPOINT_DIR: 's3://bucket/p', SLUICE_PARALLELISM: '2', SLUICE_EXCHANGE_STREAM: 'ex' };
    const run = await runSluice(['aws', 'init', JOB, '--dry-run'], env);
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { slots: unknown[] }).slots).toHaveLength(2);
  }, 60_000);

  it.each([
    ['a missing required flag', [...BASE.filter((a) => a !== '--job-id' && a !== 'j'), '--parallelism', '2'], '--job-id'],
    ['a bad number', [...BASE, '--parallelism', 'two'], '--parallelism must be an integer >= 1, got "two"'],
    ['a checkpoint dir outside S3', [...BASE.map((a) => (a === 's3://bucket/prefix' ? '/tmp/x' : a)), '--parallelism', '2'], '--checkpoint-dir must be an S3 location'],
    ['an exchange edge without --exchange-stream', [...BASE, '--parallelism', '2'], 'pass --exchange-stream NAME'],
    ['an operator at another parallelism', [...BASE, '--parallelism', '2', '--exchange-stream', 'ex', '--sink-parallelism', '1'], 'vertex "Table" runs at parallelism 1'],
    ['a bounded source', [...BASE, '--parallelism', '2', '--exchange-stream', 'ex', '--bounded'], 'source "Events" is bounded'],
    ['a 2PC sink without externalCommit', [...BASE, '--parallelism', '2', '--exchange-stream', 'ex', '--bare-sink'], 'sink "Table" commits in two phases but has no externalCommit'],
    ['an unknown flag', [...BASE, '--parallelism', '2', '--no-such-flag'], "unknown option '--no-such-flag'"],
  ])('exits 2 on %s, naming it', async (_what, args, message) => {
    const run = await runSluice(args, NO_AWS);
    expect(run.stderr).toContain(message);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
  }, 60_000);
});
