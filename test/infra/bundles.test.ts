import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { COORDINATOR_HANDLERS, SUPERVISOR_RESOURCE_ENTRY } from '../../infra/constructs/job-coordinator.ts';
import { CONTROL_HANDLERS } from '../../infra/constructs/job-control.ts';
import { HANDLER_ESBUILD, REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';

/** Every function the construct deploys, built with the construct's own esbuild settings. */
const ENTRIES = [...Object.values(COORDINATOR_HANDLERS).map((h) => h.entry), ...Object.values(CONTROL_HANDLERS).map((h) => h.entry), SUPERVISOR_RESOURCE_ENTRY];

/** What a handler bundle must never contain: job code, the native RocksDB binding, the CLI. */
const FORBIDDEN = [/^examples\//, /rocksdb/i, /node_modules\/commander\//, /^lib\/cli\//, /^lib\/runtime\//, /^lib\/api\//, /node_modules\/aws-cdk-lib\//];

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
      const probe = `const m = await import(${JSON.stringify(`file://${outfile}`)}); if (typeof m.handler !== 'function') { console.error('no handler'); process.exit(3); }`;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: out, env, encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
    });
  }

  afterAll(() => {
    // Reported in the test log: the bundle sizes (minified, AWS SDK included).
    console.log(`handler bundle sizes (bytes): ${JSON.stringify(sizes)}`);
  });
});
