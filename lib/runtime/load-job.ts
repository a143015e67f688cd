import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { ConfigError } from '../core/index.ts';
import { StreamEnvironment } from '../api/environment.ts';
import { isJobDefinition, type JobDefinition } from '../api/job.ts';
import type { JobOptions } from '../contracts/job-options.ts';

/** Imports a job module and checks that its default export is a job made with defineJob. */
export async function loadJobModule(modulePath: string): Promise<JobDefinition> {
  const absolute = resolve(modulePath);
  if (!existsSync(absolute)) throw new ConfigError(`job module not found: ${absolute}; pass the path of a .ts or .js file`);
  await ensureTypeScriptLoader(absolute);
  const mod = (await import(pathToFileURL(absolute).href)) as { default?: unknown };
  if (!isJobDefinition(mod.default)) {
    throw new ConfigError(
      `${modulePath} does not export a job: its default export must be defineJob({ name, flags, build(env, flags) { ... } })`,
    );
  }
  return mod.default;
}

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);
// Running from source, tsx is already registered (bin/sluice.js, the worker bootstrap); compiled (dist/), it is
// registered on the first TypeScript job only, so the engine's own code is never transpiled and a JavaScript job
// never loads tsx at all.
const compiled = import.meta.url.endsWith('.js');
let typeScriptLoader: Promise<void> | undefined;

function ensureTypeScriptLoader(modulePath: string): Promise<void> {
  if (!compiled || !TYPESCRIPT.has(extname(modulePath))) return Promise.resolve();
  typeScriptLoader ??= import('tsx/esm/api').then(({ register }) => void register());
  return typeScriptLoader;
}

/** Builds the job's pipeline into a fresh environment. */
export async function buildJob(job: JobDefinition, flags: Record<string, unknown>, options: JobOptions): Promise<StreamEnvironment> {
  const env = new StreamEnvironment(options);
  await job.build(env, flags as never);
  env.validate();
  return env;
}
