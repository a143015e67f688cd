// Worker threads start here. Compiled (dist/): the worker's JavaScript directly; lib/runtime/load-job.ts loads tsx if
// the job module is TypeScript. In a source checkout: the source loader first (tsx, `sluice` mapped to lib/).
import { existsSync } from 'node:fs';

const source = new URL('./worker-main.ts', import.meta.url);
if (existsSync(source)) {
  const { registerSourceLoader } = await import('./source-loader.mjs');
  await registerSourceLoader();
  await import(source.href);
} else {
  await import('./worker-main.js');
}
