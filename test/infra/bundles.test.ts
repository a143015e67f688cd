import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { COORDINATOR_HANDLERS, CYCLES_ASL, SUPERVISOR_ASL, SUPERVISOR_RESOURCE_ENTRY } from '../../infra/constructs/job-coordinator.ts';
import { CONTROL_ASL, CONTROL_HANDLERS } from '../../infra/constructs/job-control.ts';
import { HANDLER_ESBUILD, REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';

/** Every function the construct deploys, built with the construct's own esbuild settings. */
const ENTRIES = [...Object.values(COORDINATOR_HANDLERS).map((h) => h.entry), ...Object.values(CONTROL_HANDLERS).map((h) => h.entry), SUPERVISOR_RESOURCE_ENTRY];

/** What a handler bundle must never contain: job code, the native RocksDB binding, the CLI. */
const FORBIDDEN = [/^examples\//, /rocksdb/i, /node_modules\/commander\//, /^lib\/cli\//, /^lib\/runtime\//, /^lib\/api\//, /node_modules\/aws-cdk-lib\//];

/**
 * The error names a Task's Retry or Catch matches (other than the States.* and Lambda.* ones), by the handler module
 * behind the Task: Step Functions sees the error's name, which SluiceError takes from its class name.
 */
function retriedErrorNames(): Map<string, Set<string>> {
  const entries = new Map<string, string>([...Object.values(COORDINATOR_HANDLERS), ...Object.values(CONTROL_HANDLERS)].map((h) => [`\${${h.placeholder}}`, h.entry]));
  const names = new Map<string, Set<string>>();
  for (const file of [SUPERVISOR_ASL, CYCLES_ASL, CONTROL_ASL]) {
    const states = (JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8')) as { States: Record<string, { Resource?: string; Retry?: { ErrorEquals: string[] }[]; Catch?: { ErrorEquals: string[] }[] }> }).States;
    for (const state of Object.values(states)) {
      const entry = entries.get(state.Resource ?? '');
      if (entry === undefined) continue;
      for (const rule of [...(state.Retry ?? []), ...(state.Catch ?? [])]) {
        for (const name of rule.ErrorEquals) if (!/^(States|Lambda)\./.test(name)) names.set(entry, new Set([...(names.get(entry) ?? []), name]));
      }
    }
  }
  return names;
}
const RETRIED = retriedErrorNames();

const out = mkdtempSync(join(tmpdir(), 'sluice-bundles-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('handler bundles', () => {
  const sizes: Record<string, number> = {};
  for (const entry of ENTRIES) {
    it(`${entry} bundles without job code, RocksDB or commander and imports in a fresh node process`, async () => {
      const outfile = join(out, `${entry.replace(/[/.]/g, '_')}.mjs`);
      const result = await build({
        entryPoints: [join(REPO_ROOT, entry)],
        bundle: true,
        outfile,
        metafile: true,
        logLevel: 'silent',
        ...HANDLER_ESBUILD,
        mainFields: [...HANDLER_ESBUILD.mainFields],
        banner: { js: HANDLER_ESBUILD.banner },
      });
      const inputs = Object.keys(result.metafile.inputs).map((p) => relative(REPO_ROOT, join(REPO_ROOT, p)));
      expect(inputs.length).toBeGreaterThan(1);
      for (const pattern of FORBIDDEN) expect(inputs.filter((p) => pattern.test(p)), String(pattern)).toEqual([]);
      sizes[entry] = statSync(outfile).size;
      // Outside the repository (no node_modules to fall back on), with no job settings in the environment.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SLUICE_')));
      // Error names the ASL retries on survive minification (esbuild keepNames).
      const text = readFileSync(outfile, 'utf8');
      for (const name of RETRIED.get(entry) ?? []) expect(text.includes(`"${name}"`), `${entry} keeps the class name ${name}`).toBe(true);
      // Called without its environment, a coordinator handler fails with the typed error, its class name intact; a
      // control handler refuses, naming the variable. The custom resource is only imported: it would answer CloudFormation.
      const call = entry === SUPERVISOR_RESOURCE_ENTRY ? '' : `try { const r = await m.handler({ execution: 'probe', requestId: 'probe', input: { command: 'status' } }); console.log(r.outcome + ': ' + r.cause); } catch (e) { console.log(e.name); }`;
      const probe = `const m = await import(${JSON.stringify(`file://${outfile}`)}); if (typeof m.handler !== 'function') { console.error('no handler'); process.exit(3); } ${call}`;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: out, env, encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const expected = entry === SUPERVISOR_RESOURCE_ENTRY ? '' : entry.startsWith('functions/control/') ? "refused: the control state machine's handlers need SLUICE_JOB_ID in their environment" : 'ConfigError';
      expect(run.stdout.trim()).toBe(expected);
    });
  }

  afterAll(() => {
    // Reported in the test log: the bundle sizes (minified, AWS SDK included).
    console.log(`handler bundle sizes (bytes): ${JSON.stringify(sizes)}`);
  });
});
