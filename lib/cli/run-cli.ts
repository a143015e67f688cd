import { availableParallelism, hostname } from 'node:os';
import { resolve } from 'node:path';
import { CommanderError } from 'commander';
import { ConfigError } from '../core/index.ts';
import type { JobDefinition } from '../api/job.ts';
import { compileJobOptions, type JobOptions } from '../contracts/job-options.ts';
import type { JobResult } from '../runtime/job-result.ts';
import type { JobControl } from '../runtime/control/job-control.ts';
import { startRestServer, type RestServer } from '../runtime/control/rest-server.ts';
import type { ThreadedRunOptions } from '../runtime/threads/thread-runner.ts';
import { runControlCommand, type ControlRequest } from './control-commands.ts';
import {
  removeRestEndpoint,
  removeRestEndpointRecord,
  writeRestEndpoint,
  writeRestEndpointRecord,
  type RestEndpoint,
} from './rest-endpoint-file.ts';
import type { CheckpointCatalog } from '../storage/checkpoint-storage.ts';
import { openCheckpointStorageAt } from '../storage/storage-locations.ts';
import { registerCliStorageSchemes } from './storage-schemes.ts';
import { COMMON_FLAGS, RESERVED_FLAG_KEYS } from './common-flags.ts';
import { ExitCode } from './exit-codes.ts';
import { flagLabel } from './flag-names.ts';
import { checkFlagSpecs } from './flag-specs.ts';
import { FlagValueError, parseFlagValues } from './flag-values.ts';
import { toRunSettings, type RunSettings } from './run-settings.ts';
import { checkRunDirectories } from './path-checks.ts';
import { isRemoteLocation } from '../storage/storage-locations.ts';
import { findJobArgument } from './job-argument.ts';
import { buildProgram, type RunRequest } from './program.ts';
import { parseWorkerSettings, WORKER_OPTIONS_WITH_VALUE, type WorkerLaunch, type WorkerRequest } from './worker-command.ts';
import { exitCodeOf, formatFailure, formatSummary } from './report.ts';

/** What the command needs from the outside world; main.ts passes the real ones, tests pass fakes. */
export interface CliDeps {
  readonly version: string;
  loadJob(modulePath: string): Promise<JobDefinition>;
  runJob(options: ThreadedRunOptions): Promise<JobResult>;
  /** Writes text as is (help goes here). */
  stdout(text: string): void;
  /** Writes text as is (errors and the summary go here). */
  stderr(text: string): void;
  /** Processors the process may use; default os.availableParallelism(). */
  availableParallelism?(): number;
  /**
   * Runs a cluster worker (`sluice worker`) until SIGTERM or a halt; returns its exit code. main.ts loads the
   * worker's composition root (functions/worker) for it. @default the command answers that it is not available
   */
  runWorker?(launch: WorkerLaunch): Promise<ExitCode>;
}

const COMMON_OPTIONS_WITH_VALUE: ReadonlySet<string> = new Set(Object.keys(COMMON_FLAGS).map(flagLabel));

async function loadCheckedJob(deps: CliDeps, path: string): Promise<JobDefinition> {
  let job: JobDefinition;
  try {
    job = await deps.loadJob(path);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`cannot load job module ${path}: ${reason}`, { cause: err });
  }
  checkFlagSpecs(job.name, job.flags, RESERVED_FLAG_KEYS);
  return job;
}

function toJobOptions(common: Record<string, unknown>): JobOptions {
  const options: JobOptions = { parallelism: common['parallelism'] as number, maxParallelism: common['maxParallelism'] as number };
  try {
    compileJobOptions(options);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${err.message} (set by --parallelism / --max-parallelism)`, { cause: err });
    throw err;
  }
  return options;
}

/**
 * A warning line when more worker threads than the machine's processors were asked for (`--threads`), else
 * undefined. The threads then take turns on the processors: the job runs, but no faster. A parallelism above the
 * processors alone needs no warning: its subtasks share the threads.
 */
export function oversubscriptionWarning(threads: number, processors: number): string | undefined {
  if (threads <= processors) return undefined;
  return (
    `warning: --threads ${threads} is more than the ${processors} processor${processors === 1 ? '' : 's'} this machine offers: ` +
    `the threads take turns on them: the job runs, but CPU-bound work gets no faster than with --threads ${processors}`
  );
}

/** Serves a running job's REST API, announces it on stderr and in `<checkpoint-dir>/rest.json`, and stops both at the end. */
class RestAnnouncement {
  private server: RestServer | undefined;
  private endpoint: RestEndpoint | undefined;
  /** The object store's catalog holding the endpoint record (remote checkpoint locations only). */
  private catalog: CheckpointCatalog | undefined;

  constructor(
    private readonly settings: RunSettings,
    private readonly print: (line: string) => void,
  ) {}

  async start(job: JobControl, jobName: string): Promise<void> {
    this.server = await startRestServer([job], { port: this.settings.restPort });
    this.print(`REST API on ${this.server.url}`);
    const dir = this.settings.checkpointing?.dir;
    // The endpoint record lets "sluice savepoint --checkpoint-dir DIR" find the job: a file in a local folder, a
    // job record beside the checkpoints in an object store.
    if (dir === undefined) return;
    const endpoint = { url: this.server.url, pid: process.pid, jobId: job.id, jobName, startTime: Date.now(), host: hostname() };
    try {
      if (isRemoteLocation(dir)) {
        this.catalog = await openCheckpointStorageAt(dir);
        await writeRestEndpointRecord(this.catalog.records, endpoint);
      } else {
        await writeRestEndpoint(dir, endpoint);
      }
      this.endpoint = endpoint;
    } catch (err) {
      this.print(`warning: could not record the REST API in ${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async stop(): Promise<void> {
    const dir = this.settings.checkpointing?.dir;
    if (dir !== undefined && this.endpoint !== undefined) {
      if (this.catalog !== undefined) await removeRestEndpointRecord(this.catalog.records, this.endpoint);
      else await removeRestEndpoint(dir, this.endpoint);
    }
    (this.catalog as Partial<{ close(): void }> | undefined)?.close?.();
    await this.server?.close();
  }
}

/**
 * The `sluice` command: `sluice run <job> [flags]`, `sluice checkpoints|savepoint|stop` for a running job, and
 * `sluice aws init|status|savepoint|stop` for a cluster job (lib/cli/aws-cli.ts). Loads the job module first (its flags become options),
 * parses and checks every flag, runs the job on worker threads (serving its REST API) and prints a summary. Never
 * exits the process: returns the exit code (0 finished or stopped with a savepoint, 1 job failed, 2 bad usage or
 * configuration; for the other commands 0 done, 1 request failed, 2 bad usage).
 */
export async function runCli(argv: readonly string[], deps: CliDeps): Promise<ExitCode> {
  registerCliStorageSchemes();
  if (argv[0] === 'aws' || (argv[0] === 'help' && argv[1] === 'aws')) {
    // Loaded on demand: only the cluster commands need the DynamoDB client.
    const { runAwsCli } = await import('./aws-cli.ts');
    return runAwsCli(argv[0] === 'aws' ? argv.slice(1) : ['--help'], deps);
  }
  const printLines = (lines: string[]): void => deps.stderr(lines.map((l) => `${l}\n`).join(''));
  const jobArg =
    argv[0] === 'run'
      ? findJobArgument(argv.slice(1), COMMON_OPTIONS_WITH_VALUE)
      : argv[0] === 'worker'
        ? findJobArgument(argv.slice(1), WORKER_OPTIONS_WITH_VALUE)
        : undefined;
  let job: JobDefinition | undefined;
  if (jobArg !== undefined) {
    try {
      job = await loadCheckedJob(deps, jobArg);
    } catch (err) {
      printLines(formatFailure(jobArg, err));
      return ExitCode.usage;
    }
  }

  let request: RunRequest | undefined;
  let control: ControlRequest | undefined;
  let worker: WorkerRequest | undefined;
  const program = buildProgram({
    version: deps.version,
    job: job === undefined || jobArg === undefined ? undefined : { path: jobArg, definition: job },
    output: { writeOut: deps.stdout, writeErr: deps.stderr },
    onRun: (r) => {
      request = r;
    },
    onControl: (c) => {
      control = c;
    },
    onWorker: (w) => {
      worker = w;
    },
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    throw err;
  }
  if (control !== undefined) return runControlCommand(control, { stdout: deps.stdout, stderr: deps.stderr });
  if (worker !== undefined) return startWorker(worker, job, jobArg, deps, printLines);
  if (request === undefined) return ExitCode.ok;
  if (job === undefined || request.jobPath !== jobArg) {
    printLines([`error: give the job module right after "run": sluice run <job> [flags] (got ${JSON.stringify(request.jobPath)})`]);
    return ExitCode.usage;
  }

  const problems: string[] = [];
  const check = <T>(parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...(err instanceof FlagValueError ? err.problems : [err.message]));
      return undefined;
    }
  };
  const raw = request;
  const common = check(() => parseFlagValues(COMMON_FLAGS, raw.common));
  const jobOptions = common === undefined ? undefined : check(() => toJobOptions(common));
  const settings = common === undefined ? undefined : check(() => toRunSettings(common));
  const flags = check(() => parseFlagValues(job.flags, raw.job));
  if (jobOptions === undefined || flags === undefined || settings === undefined) {
    printLines([...problems.map((p) => `error: ${p}`), `(run "sluice run ${jobArg} --help" to list the flags)`]);
    return ExitCode.usage;
  }
  // The flags are well-formed; the folders they name must also be usable (the message says how, no help needed).
  check(() => checkRunDirectories(settings));
  if (problems.length > 0) {
    printLines(problems.map((p) => `error: ${p}`));
    return ExitCode.usage;
  }

  const threads = common?.['threads'] as number | undefined;
  // The runner lowers --threads to the parallelism; only threads that will run are worth a warning.
  const warning = threads === undefined ? undefined : oversubscriptionWarning(Math.min(threads, jobOptions.parallelism ?? 1), (deps.availableParallelism ?? availableParallelism)());
  if (warning !== undefined) printLines([warning]);
  const rest = new RestAnnouncement(settings, (line) => printLines([line]));
  try {
    const result = await deps.runJob({
      modulePath: resolve(request.jobPath),
      flags,
      jobOptions,
      checkpointing: settings.checkpointing,
      restart: settings.restart,
      stateBackend: settings.stateBackend,
      ...(threads === undefined ? {} : { threads }),
      log: (line) => printLines([line]),
      onStart: (control) => rest.start(control, job.name),
    });
    printLines([formatSummary(job.name, result)]);
    return ExitCode.ok;
  } catch (err) {
    printLines(formatFailure(job.name, err));
    return exitCodeOf(err);
  } finally {
    await rest.stop();
  }
}

/** `sluice worker`: checks the worker's and the job's flags (exit 2 naming each bad one), then runs the worker. */
async function startWorker(
  request: WorkerRequest,
  job: JobDefinition | undefined,
  jobArg: string | undefined,
  deps: CliDeps,
  printLines: (lines: string[]) => void,
): Promise<ExitCode> {
  if (job === undefined || request.jobPath !== jobArg) {
    printLines([`error: give the job module right after "worker": sluice worker <job> [flags] (got ${JSON.stringify(request.jobPath)})`]);
    return ExitCode.usage;
  }
  const problems: string[] = [];
  let settings: WorkerLaunch['settings'] | undefined;
  let jobFlags: WorkerLaunch['jobFlags'] | undefined;
  try {
    settings = parseWorkerSettings(request.worker);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.message.split('\n'));
  }
  try {
    jobFlags = parseFlagValues(job.flags, request.job);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...(err instanceof FlagValueError ? err.problems : [err.message]));
  }
  if (settings === undefined || jobFlags === undefined) {
    printLines([...problems.map((p) => `error: ${p}`), `(run "sluice worker ${jobArg} --help" to list the flags)`]);
    return ExitCode.usage;
  }
  if (deps.runWorker === undefined) {
    printLines(['error: this build of sluice cannot run cluster workers (functions/worker is not installed)']);
    return ExitCode.usage;
  }
  return deps.runWorker({ jobPath: resolve(request.jobPath), jobFlags, settings });
}
