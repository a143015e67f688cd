import { Command, type Option } from 'commander';
import type { ControlCommand, ControlRequest } from './control-commands.ts';
import type { FlagSpecs, JobDefinition } from '../api/job.ts';
import { COMMON_FLAGS } from './common-flags.ts';
import { flagOptions } from './flag-options.ts';
import type { RawFlagValue } from './flag-values.ts';
import { addWorkerCommand, type WorkerRequest } from './worker-command.ts';

/** What `sluice run` was asked to do, before the flag values are checked. */
export interface RunRequest {
  readonly jobPath: string;
  readonly common: Record<string, RawFlagValue>;
  readonly job: Record<string, RawFlagValue>;
}

export interface ProgramOutput {
  writeOut(text: string): void;
  writeErr(text: string): void;
}

export interface ProgramSpec {
  readonly version: string;
  /** The job named on the command line, when it could be loaded: its flags become options of `run`. */
  readonly job: { readonly path: string; readonly definition: JobDefinition } | undefined;
  readonly output: ProgramOutput;
  /** Called with the parsed `run` command; the caller validates and runs it. */
  readonly onRun: (request: RunRequest) => void;
  /** Called with a parsed `checkpoints`, `savepoint` or `stop` command. */
  readonly onControl: (request: ControlRequest) => void;
  /** Called with a parsed `worker` command (a cluster worker process). @default the command is not offered */
  readonly onWorker?: (request: WorkerRequest) => void;
}

const CONTROL_COMMANDS: readonly [ControlCommand, string, string][] = [
  ['checkpoints', 'list the checkpoints and savepoints of a running job', 'Print the checkpoint history of a running job, newest first.'],
  ['savepoint', 'take a savepoint of a running job', 'Take a savepoint of a running job and print its directory once it is complete.'],
  [
    'stop',
    'stop a running job with a savepoint',
    'Take a savepoint, let the sinks commit what it covers, then stop the job (it exits with 0). Prints the savepoint directory; the same "sluice run" command continues from it, as does "sluice run <job> --restore DIR" (at any parallelism).',
  ],
];

/** `sluice checkpoints|savepoint|stop [--url URL | --port N | --checkpoint-dir DIR] [--job ID] [--json]` */
function addControlCommands(program: Command, onControl: (request: ControlRequest) => void): void {
  for (const [name, summary, description] of CONTROL_COMMANDS) {
    program
      .command(name)
      .summary(summary)
      .description(`${description} The job is found through its REST API (see "sluice run --rest-port").`)
      .option('--url <url>', 'the REST API as "sluice run" printed it: http://127.0.0.1:<port>')
      .option('--port <number>', 'the REST port on 127.0.0.1')
      .option('--checkpoint-dir <dir>', "the job's --checkpoint-dir: its REST API is recorded in <dir>/rest.json")
      .option('--job <id>', 'the job id (default: the only job)')
      .option('--json', 'print the JSON answer of the REST API')
      .showHelpAfterError(`(run "sluice ${name} --help" for usage)`)
      .action((opts: Omit<ControlRequest, 'command'>) => onControl({ command: name, ...opts }));
  }
}

function addFlags(command: Command, specs: FlagSpecs, heading: string): Map<string, Option[]> {
  const byKey = new Map<string, Option[]>();
  for (const [key, spec] of Object.entries(specs)) {
    const options = flagOptions(key, spec);
    for (const option of options) command.addOption(option.helpGroup(heading));
    byKey.set(key, options);
  }
  return byKey;
}

function rawValues(command: Command, byKey: Map<string, Option[]>): Record<string, RawFlagValue> {
  const opts = command.opts<Record<string, RawFlagValue>>();
  const raw: Record<string, RawFlagValue> = {};
  for (const [key, options] of byKey) raw[key] = opts[(options[0] as Option).attributeName()];
  return raw;
}

/**
 * The `sluice` command line. Commander parses; it neither converts nor defaults flag values (parseFlagValues
 * does), and it never exits the process: errors and help surface as CommanderError through exitOverride.
 */
export function buildProgram(spec: ProgramSpec): Command {
  const program = new Command('sluice')
    .description('Sluice: stateful stream processing in TypeScript (event time, windows, keyed state)')
    .version(spec.version, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => spec.output.writeOut(s), writeErr: (s) => spec.output.writeErr(s) })
    .showHelpAfterError('(run "sluice --help" for usage)');

  const job = spec.job?.definition;
  const run = program
    .command('run')
    .summary('run a job module on worker threads')
    .description(
      job === undefined
        ? 'Run a job module (its default export is defineJob({...})) until its input ends.'
        : `Run job "${job.name}"${job.description === undefined ? '' : `: ${job.description}`}`,
    )
    .argument('<job>', 'path of the job module (.ts or .js)')
    .helpOption('-h, --help', 'show the common flags and the flags of the job')
    .showHelpAfterError(
      spec.job === undefined ? '(run "sluice run --help" for usage)' : `(run "sluice run ${spec.job.path} --help" to list the flags)`,
    );
  const common = addFlags(run, COMMON_FLAGS, 'Common flags:');
  const jobFlags = job === undefined ? new Map<string, Option[]>() : addFlags(run, job.flags, `Job flags (${job.name}):`);
  if (job === undefined) run.addHelpText('after', '\nJob flags: "sluice run <job> --help" lists the flags of that job.');
  run.action((jobPath: string, _opts: unknown, command: Command) => {
    spec.onRun({ jobPath, common: rawValues(command, common), job: rawValues(command, jobFlags) });
  });
  addControlCommands(program, spec.onControl);
  // Listed for --help only: runCli hands `sluice aws ...` to lib/cli/aws-cli.ts before this program parses.
  program
    .command('aws')
    .summary('deploy and control a job on the cluster runtime: init, status, savepoint, stop (see "sluice aws --help")')
    .allowUnknownOption()
    .allowExcessArguments();

  const onWorker = spec.onWorker;
  if (onWorker !== undefined) {
    addWorkerCommand(
      program,
      (command) => {
        const flags = job === undefined ? new Map<string, Option[]>() : addFlags(command, job.flags, `Job flags (${job.name}):`);
        return (parsed) => rawValues(parsed, flags);
      },
      onWorker,
    );
  }
  return program;
}
