// Entry point of the `sluice` command (bin/sluice.js registers the TypeScript loader and imports this).
import { readFileSync } from 'node:fs';
import { loadJobModule } from '../runtime/load-job.ts';
import { runOnThreads } from '../runtime/threads/thread-runner.ts';
import { runCli } from './run-cli.ts';
import { exitOnSignals } from './signals.ts';
import type { ExitCode } from './exit-codes.ts';
import type { WorkerLaunch } from './worker-command.ts';

/** What functions/worker/main.ts exports for `sluice worker`. */
interface WorkerModule {
  runWorker(launch: WorkerLaunch, io: { stdout(text: string): void; stderr(text: string): void }): Promise<ExitCode>;
}

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const stderr = (text: string): void => void process.stderr.write(text);

const argv = process.argv.slice(2);
// A cluster worker handles SIGTERM itself: it stops its slots and releases their leases before it exits.
if (argv[0] !== 'worker') exitOnSignals(stderr);
const code = await runCli(argv, {
  version: pkg.version,
  loadJob: loadJobModule,
  runJob: runOnThreads,
  runWorker: async (launch) => {
    // The worker's composition root (functions/worker) is loaded by URL, only for `sluice worker`: the engine does
    // not import the AWS adapters it wires.
    const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    const worker = (await import(new URL(`../../functions/worker/main${extension}`, import.meta.url).href)) as WorkerModule;
    return worker.runWorker(launch, { stdout: (text) => void process.stdout.write(text), stderr });
  },
  stdout: (text) => void process.stdout.write(text),
  stderr,
});
process.exitCode = code;
// Let stdout/stderr drain and exit naturally; if a leaked handle keeps the event loop alive, exit anyway.
setTimeout(() => process.exit(code), 2000).unref();
