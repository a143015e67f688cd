// Inside the repo `sluice`, `sluice/aws` and `sluice/rocksdb` are the sources; for users they are the build. Three
// places say so and must agree: package.json's exports (the build), tsconfig.json's paths (tsc, tsx, vitest) and
// the source loader of bin/sluice.js and the worker threads.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module without declarations
import { SOURCE_ENTRY_POINTS } from '../../lib/runtime/threads/source-loader.mjs';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const json = (file: string): unknown => JSON.parse(readFileSync(`${REPO_ROOT}${file}`, 'utf8'));

const pkg = json('package.json') as { exports: Record<string, { types: string; import: string }> };
const tsconfig = ts.readConfigFile(`${REPO_ROOT}tsconfig.json`, ts.sys.readFile).config as { compilerOptions: { paths: Record<string, string[]> } };
const sourceLoader = SOURCE_ENTRY_POINTS as Record<string, string>;

/** `./dist/x/index.js` -> `lib/x/index.ts`: the source a built entry point is compiled from. */
function sourceOf(built: string): string {
  return built.replace(/^\.\/dist\//, 'lib/').replace(/\.js$/, '.ts');
}

describe('the entry points of the package', () => {
  const exported = Object.fromEntries(
    Object.entries(pkg.exports).map(([subpath, target]) => [subpath === '.' ? 'sluice' : `sluice/${subpath.slice(2)}`, target]),
  );

  it('export types beside the JavaScript of each entry point', () => {
    for (const target of Object.values(exported)) expect(target.types).toBe(target.import.replace(/\.js$/, '.d.ts'));
  });

  it('map to the same sources in tsconfig.json paths and in the source loader', () => {
    const fromExports = Object.fromEntries(Object.entries(exported).map(([name, target]) => [name, sourceOf(target.import)]));
    const fromPaths = Object.fromEntries(Object.entries(tsconfig.compilerOptions.paths).map(([name, [path]]) => [name, path!.replace(/^\.\//, '')]));
    expect(fromPaths).toEqual(fromExports);
    expect(sourceLoader).toEqual(fromExports);
  });
});
