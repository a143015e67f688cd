// Source checkouts only (bin/sluice.js and the worker bootstrap, when lib/ is present; never copied to dist/): tsx
// for lib/'s TypeScript, and `sluice`, `sluice/aws`, `sluice/rocksdb` resolved to lib/ as tsconfig.json's `paths`
// do for tsc and tsx, because package.json's exports point to the build and jobs may live outside the repo (where
// tsx finds no tsconfig). test/packaging/source-mapping.test.ts keeps this list equal to tsconfig.json's.
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

export const SOURCE_ENTRY_POINTS = {
  sluice: 'lib/index.ts',
  'sluice/aws': 'lib/connectors/aws/index.ts',
  'sluice/rocksdb': 'lib/state/rocksdb/index.ts',
};

let registered = false;

export async function registerSourceLoader() {
  if (registered) return;
  registered = true;
  registerTsx();
  const root = new URL('../../../', import.meta.url);
  const entries = Object.fromEntries(Object.entries(SOURCE_ENTRY_POINTS).map(([name, path]) => [name, new URL(path, root).href]));
  register('./source-resolve-hooks.mjs', { parentURL: import.meta.url, data: { entries } });
}
