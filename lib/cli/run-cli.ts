import { availableParallelism } from 'node:os';
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
import { removeRestEndpoint, writeRestEndpoint, type RestEndpoint } from './rest-endpoint-file.ts';
import { COMMON_FLAGS, RESERVED_FLAG_KEYS } from './common-flags.ts';
import { ExitCode } from './exit-codes.ts';
import { flagLabel } from './flag-names.ts';
import { checkFlagSpecs } from './flag-specs.ts';
import { FlagValueError, parseFlagValues } from './flag-values.ts';
import { toRunSettings, type RunSettings } from './run-settings.ts';
import { checkRunDirectories } from './path-checks.ts';
import { isRemoteLocation } from '../runtime/restore/open-checkpoint-storage.ts';
import { findJobArgument } from './job-argument.ts';
import { buildProgram, type RunRequest } from './program.ts';
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
 * A warning line when `parallelism` is above the machine's processors, else undefined. Each subtask index runs on
 * its own worker thread today, so the threads then take turns on the processors: the job runs, but no faster.
 */
export function oversubscriptionWarning(parallelism: number, processors: number): string | undefined {
  if (parallelism <= processors) return undefined;
  return (
    `warning: --parallelism ${parallelism} is more than the ${processors} processor${processors === 1 ? '' : 's'} this machine offers: ` +
    `each subtask index runs on its own worker thread, so ${parallelism} threads share them: the job runs, but CPU-bound work gets no faster than at --parallelism ${processors}`
  );
}

/** Serves a running job's REST API, announces it on stderr and in `<checkpoint-dir>/rest.json`, and stops both at the end. */
class RestAnnouncement {
  private server: RestServer | undefined;
  private endpoint: RestEndpoint | undefined;

  constructor(
    private readonly settings: RunSettings,
    private readonly print: (line: string) => void,
  ) {}

  async start(job: JobControl, jobName: string): Promise<void> {
    this.server = await startRestServer([job], { port: this.settings.restPort });
    this.print(`REST API on ${this.server.url}`);
    const dir = this.settings.checkpointing?.dir;
    // The endpoint file lets "sluice savepoint --checkpoint-dir DIR" find the job; remote folders use --url instead.
    if (dir === undefined || isRemoteLocation(dir)) return;
    const endpoint = { url: this.server.url, pid: process.pid, jobId: job.id, jobName, startTime: Date.now() };
    try {
      await writeRestEndpoint(dir, endpoint);
      this.endpoint = endpoint;
    } catch (err) {
      this.print(`warning: could not record the REST API in ${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async stop(): Promise<void> {
    const dir = this.settings.checkpointing?.dir;
    if (dir !== undefined && this.endpoint !== undefined) await removeRestEndpoint(dir, this.endpoint);
    await this.server?.close();
  }
}

/**
 * The `sluice` command: `sluice run <job> [flags]`, and `sluice checkpoints|savepoint|stop` for a running job. Loads the job module first (its flags become options),
 * parses and checks every flag, runs the job on worker threads (serving its REST API) and prints a summary. Never
 * exits the process: returns the exit code (0 finished or stopped with a savepoint, 1 job failed, 2 bad usage or
 * configuration; for the other commands 0 done, 1 request failed, 2 bad usage).
 */
export async function runCli(argv: readonly string[], deps: CliDeps): Promise<ExitCode> {
  const printLines = (lines: string[]): void => deps.stderr(lines.map((l) => `${l}\n`).join(''));
  const jobArg = argv[0] === 'run' ? findJobArgument(argv.slice(1), COMMON_OPTIONS_WITH_VALUE) : undefined;
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
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    throw err;
  }
  if (control !== undefined) return runControlCommand(control, { stdout: deps.stdout, stderr: deps.stderr });
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

  const warning = oversubscriptionWarning(jobOptions.parallelism ?? 1, (deps.availableParallelism ?? availableParallelism)());
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
