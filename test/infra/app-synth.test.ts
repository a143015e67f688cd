import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';

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

describe('infra/app.ts', () => {
  it('synthesizes the stack offline with local esbuild bundling and cdk-nag, from cdk.json-style context', () => {
    const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as { app: string; context: Record<string, unknown> };
    expect(cdkJson.app).toBe('npx tsx infra/app.ts');
    const run = synthApp({ ...cdkJson.context, jobId: 'orders', jobFlags: ['--table', 'totals'] });
    expect(run.stderr).not.toMatch(/AwsSolutions-/);
    expect(run.status, run.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as { artifacts: Record<string, { type: string }> };
    expect(manifest.artifacts['sluice-orders']?.type).toBe('aws:cloudformation:stack');
    const template = JSON.parse(readFileSync(join(out, 'sluice-orders.template.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions).toHaveLength(8);
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::ECS::Service')).toHaveLength(1);
    // Every function's code is a bundled asset in the assembly (esbuild ran; no Docker).
    const assets = JSON.parse(readFileSync(join(out, 'sluice-orders.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string; packaging: string } }>;
      dockerImages: Record<string, unknown>;
    };
    const zipped = Object.values(assets.files).filter((f) => f.source.packaging === 'zip');
    expect(zipped.length).toBe(8);
    // The worker image is an asset built at deploy time: synth needed no Docker.
    expect(Object.keys(assets.dockerImages)).toHaveLength(1);
    for (const f of zipped) expect(readFileSync(join(out, f.source.path, 'index.mjs'), 'utf8').length).toBeGreaterThan(1000);
  });

});
