#!/usr/bin/env node
// `npm run build` (and `npm pack`, through prepack): lib/ compiled to dist/ with declarations. dist/ is emptied first so
// a deleted source never survives as a stale .js; the worker bootstrap (.mjs, not compiled by tsc) is copied beside
// the compiled worker it loads. `--clean` (postpack) only removes dist/: after packing, no build is left in the
// checkout for a plain `node` import of `sluice` to pick up once lib/ has changed.
import { spawnSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
const COPIED = ['runtime/threads/worker-bootstrap.mjs'];

rmSync(`${root}dist`, { recursive: true, force: true });
if (process.argv.includes('--clean')) process.exit(0);
const compiled = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
for (const file of COPIED) copyFileSync(`${root}lib/${file}`, `${root}dist/${file}`);
