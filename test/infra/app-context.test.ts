import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { jobPropsFromContext } from '../../infra/app-context.ts';
import { REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';
import { ConfigError } from '../../lib/core/errors.ts';

const out = mkdtempSync(join(tmpdir(), 'sluice-cdk-out-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Runs infra/app.ts as `cdk synth` does: context in CDK_CONTEXT_JSON, the cloud assembly into CDK_OUTDIR. */
function synthApp(context: Record<string, unknown>) {
  return spawnSync(join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), ['infra/app.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: out, CDK_DEFAULT_REGION: 'us-east-1', CDK_DEFAULT_ACCOUNT: '123456789012' },
    encoding: 'utf8',
    timeout: 170_000,
  });
}

describe('infra/app.ts with invalid context', () => {
  it('exits 2 naming the context key when the configuration is invalid', () => {
    const missing = synthApp({});
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('cdk context "job" is missing');
  });
});

describe('jobPropsFromContext', () => {
  const reader = (context: Record<string, unknown>) => (name: string) => context[name];

  it('reads strings from the command line and JSON from cdk.json alike', () => {
    expect(
      jobPropsFromContext(reader({ job: 'jobs/a.ts', parallelism: '8', workers: 3, exchange: 'true', jobFlags: '--x 1  --y', removalPolicy: 'destroy', sinkTables: 'a-table, b-table' })),
    ).toEqual({ jobModule: 'jobs/a.ts', parallelism: 8, workers: 3, exchange: true, jobFlags: ['--x', '1', '--y'], removalPolicy: RemovalPolicy.DESTROY, sinkTables: ['a-table', 'b-table'] });
    expect(jobPropsFromContext(reader({ job: 'jobs/a.ts', jobFlags: ['--a b'] }))).toEqual({ jobModule: 'jobs/a.ts', jobFlags: ['--a b'] });
  });

  it.each([
    [{}, /"job" is missing/],
    [{ job: 'a.ts', exchange: 'yes' }, /"exchange" must be true or false/],
    [{ job: 'a.ts', removalPolicy: 'keep' }, /"removalPolicy" must be one of retain, destroy, snapshot/],
    [{ job: 'a.ts', jobFlags: [1] }, /"jobFlags" must be a string or an array of strings/],
    [{ job: { path: 'a.ts' } }, /"job" must be a string or number/],
  ])('refuses %o', (context, message) => {
    expect(() => jobPropsFromContext(reader(context))).toThrow(ConfigError);
    expect(() => jobPropsFromContext(reader(context))).toThrow(message);
  });
});
