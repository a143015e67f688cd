#!/usr/bin/env node
// The `sluice` command. Installed from npm it runs the compiled CLI in dist/, and only the job module is transpiled
// (lib/runtime/load-job.ts loads tsx when the job is TypeScript). In a source checkout (lib/ present: the repo, a git
// dependency) it runs lib/ through tsx and never dist/, so a stale build cannot be run by mistake.
import { existsSync } from 'node:fs';

const source = new URL('../lib/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const { registerSourceLoader } = await import('../lib/runtime/threads/source-loader.mjs');
  await registerSourceLoader();
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
