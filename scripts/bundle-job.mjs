#!/usr/bin/env node
// `node scripts/bundle-job.mjs <job module> <out.mjs>`: the worker image's build step (Dockerfile, build arg JOB).
// Bundles the job module and the files it imports into one ES module with esbuild; the engine (`sluice`,
// `sluice/aws`, `sluice/rocksdb`) and every dependency of package.json stay imports, resolved in the image from
// lib/ (bin/sluice.js maps them) and the production node_modules: one copy of the engine, native modules
// (RocksDB) where npm installed them. A job that reaches into lib/ by a relative path would bundle a second copy
// of the engine, whose classes the first does not recognize: refused (exit 2) with the import to change.
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ENGINE = ['sluice', 'sluice/*'];

function fail(message, code = 2) {
  process.stderr.write(`bundle-job: ${message}\n`);
  process.exit(code);
}

/** Engine imports by relative path are refused: they would bundle lib/ a second time. */
const refuseEngineSources = {
  name: 'refuse-engine-sources',
  setup(build) {
    const lib = resolve(root, 'lib');
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      if (target === lib || target.startsWith(`${lib}/`)) {
        return {
          errors: [
            {
              text: `${relative(root, args.importer)} imports the engine by path ("${args.path}"): import it as 'sluice', 'sluice/aws' or 'sluice/rocksdb' so the image's one copy of the engine is used`,
            },
          ],
        };
      }
      return undefined;
    });
  },
};

export async function bundleJob(jobPath, outFile) {
  const { build } = await import('esbuild');
  const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
  const dependencies = Object.keys(pkg.dependencies ?? {}).flatMap((name) => [name, `${name}/*`]);
  const result = await build({
    entryPoints: [resolve(jobPath)],
    outfile: resolve(outFile),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: [...ENGINE, ...dependencies],
    // tsconfig.json's `paths` map `sluice` to lib/: here it must stay an import.
    tsconfigRaw: {},
    plugins: [refuseEngineSources],
    logLevel: 'silent',
    metafile: true,
    sourcemap: 'inline',
    sourcesContent: false,
  });
  return { inputs: Object.keys(result.metafile.inputs), bytes: result.metafile.outputs[relative(process.cwd(), resolve(outFile))]?.bytes };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [jobPath, outFile] = process.argv.slice(2);
  if (jobPath === undefined || jobPath === '' || outFile === undefined) fail('usage: node scripts/bundle-job.mjs <job module> <out.mjs> (the Dockerfile passes --build-arg JOB=<job module>)');
  try {
    const { inputs } = await bundleJob(jobPath, outFile);
    process.stdout.write(`bundled ${jobPath} (${inputs.length} file${inputs.length === 1 ? '' : 's'}) into ${outFile}\n`);
  } catch (error) {
    const messages = error?.errors?.map((e) => `${e.location?.file ?? ''}${e.location ? `:${e.location.line}` : ''} ${e.text}`.trim());
    fail(messages?.length ? messages.join('\n') : String(error?.message ?? error));
  }
}
