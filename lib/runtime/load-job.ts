import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../core/index.ts';
import { StreamEnvironment } from '../api/environment.ts';
import { isJobDefinition, type JobDefinition } from '../api/job.ts';
import type { JobOptions } from '../contracts/job-options.ts';

/** Imports a job module and checks that its default export is a job made with defineJob. */
export async function loadJobModule(modulePath: string): Promise<JobDefinition> {
  const absolute = resolve(modulePath);
  if (!existsSync(absolute)) throw new ConfigError(`job module not found: ${absolute}; pass the path of a .ts or .js file`);
  const mod = (await import(pathToFileURL(absolute).href)) as { default?: unknown };
  if (!isJobDefinition(mod.default)) {
    throw new ConfigError(
      `${modulePath} does not export a job: its default export must be defineJob({ name, flags, build(env, flags) { ... } })`,
    );
  }
  return mod.default;
}

/** Builds the job's pipeline into a fresh environment. */
export async function buildJob(job: JobDefinition, flags: Record<string, unknown>, options: JobOptions): Promise<StreamEnvironment> {
  const env = new StreamEnvironment(options);
  await job.build(env, flags as never);
  env.validate();
  return env;
}
