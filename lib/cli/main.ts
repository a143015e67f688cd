// Entry point of the `sluice` command (bin/sluice.js registers the TypeScript loader and imports this).
import { readFileSync } from 'node:fs';
import { loadJobModule } from '../runtime/load-job.ts';
import { runOnThreads } from '../runtime/threads/thread-runner.ts';
import { runCli } from './run-cli.ts';
import { exitOnSignals } from './signals.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const stderr = (text: string): void => void process.stderr.write(text);

exitOnSignals(stderr);
const code = await runCli(process.argv.slice(2), {
  version: pkg.version,
  loadJob: loadJobModule,
  runJob: runOnThreads,
  stdout: (text) => void process.stdout.write(text),
  stderr,
});
process.exitCode = code;
// Let stdout/stderr drain and exit naturally; if a leaked handle keeps the event loop alive, exit anyway.
setTimeout(() => process.exit(code), 2000).unref();
