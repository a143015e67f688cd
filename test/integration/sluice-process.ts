import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

export interface SluiceRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts `node bin/sluice.js <args>` in the repository root (with `env`, default this process's environment). */
export function startSluice(args: readonly string[], env?: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<SluiceRun> } {
  const child = spawn(process.execPath, [SLUICE, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], ...(env === undefined ? {} : { env }) });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<SluiceRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export function runSluice(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<SluiceRun> {
  return startSluice(args, env).done;
}

/** Polls `probe` every 25 ms until it returns a value (not undefined); fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The REST URL that `sluice run` recorded in its checkpoint folder, once it has. */
export function restUrl(checkpointDir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(checkpointDir, 'rest.json'), 'utf8')) as { url: string }).url;
  } catch {
    return undefined;
  }
}
