import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { Command, CommanderError, type Option } from 'commander';
import { ConfigError, SluiceError } from '../core/index.ts';
import type { FlagSpecs, JobDefinition } from '../api/job.ts';
import type { RequestItem } from '../cluster/control-items.ts';
import { JobAdminTable, type JobAdmin } from '../connectors/aws/cluster/job-admin-table.ts';
import { buildPhysicalPlan } from '../graph/physical-plan.ts';
import { clusterConfigItem, planSlots, type ClusterDeployment } from '../graph/slot-plan.ts';
import { buildJob } from '../runtime/load-job.ts';
import { AWS_INIT_FLAGS, AWS_REQUEST_FLAGS, AWS_STATUS_FLAGS, awsFlagOptions } from './aws-flags.ts';
import { formatClusterStatus } from './aws-status-format.ts';
import { RESERVED_FLAG_KEYS } from './common-flags.ts';
import { ExitCode } from './exit-codes.ts';
import { flagLabel } from './flag-names.ts';
import { flagOptions } from './flag-options.ts';
import { checkFlagSpecs } from './flag-specs.ts';
import { FlagValueError, parseFlagValues, type FlagValue, type RawFlagValue } from './flag-values.ts';
import { findJobArgument } from './job-argument.ts';
import { exitCodeOf, formatFailure } from './report.ts';

/** What `sluice aws ...` needs from the outside world; tests pass fakes (an in-memory JobAdmin). */
export interface AwsCliDeps {
  readonly version: string;
  loadJob(modulePath: string): Promise<JobDefinition>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** @default the control table over DynamoDB, with region, credentials and endpoint from the SDK's default chains */
  openJobAdmin?(target: { readonly tableName: string; readonly jobId: string }): JobAdmin;
  /** @default Date.now */
  now?(): number;
}

type AwsCommand = 'init' | 'status' | 'savepoint' | 'stop';

interface ParsedAws {
  readonly command: AwsCommand;
  readonly jobPath?: string;
  readonly cluster: Record<string, RawFlagValue>;
  readonly job: Record<string, RawFlagValue>;
}

const INIT_OPTIONS_WITH_VALUE: ReadonlySet<string> = new Set(
  Object.entries(AWS_INIT_FLAGS)
    .filter(([, spec]) => spec.type !== 'boolean')
    .map(([key]) => flagLabel(key)),
);
/** A job flag may not reuse a common flag of `sluice run` nor a cluster flag of `sluice aws init`. */
const INIT_RESERVED_KEYS: ReadonlySet<string> = new Set([...RESERVED_FLAG_KEYS, ...Object.keys(AWS_INIT_FLAGS)]);

const REQUEST_DESCRIPTIONS: Readonly<Record<'savepoint' | 'stop', string>> = {
  savepoint: 'Ask the coordinator for a savepoint (a request#<id> item) and print its path once it is complete.',
  stop: 'Take a savepoint, let the sinks commit what it covers, then stop every slot (workers release their leases). Prints the savepoint path: "sluice aws init --fresh --restore PATH" deploys from it (at any parallelism).',
};

function addFlags(command: Command, specs: FlagSpecs, heading: string, options: (key: string, spec: FlagSpecs[string]) => Option[]): Map<string, Option[]> {
  const byKey = new Map<string, Option[]>();
  for (const [key, spec] of Object.entries(specs)) {
    const made = options(key, spec);
    for (const option of made) command.addOption(option.helpGroup(heading));
    byKey.set(key, made);
  }
  return byKey;
}

function rawValues(command: Command, byKey: Map<string, Option[]>): Record<string, RawFlagValue> {
  const opts = command.opts<Record<string, RawFlagValue>>();
  const raw: Record<string, RawFlagValue> = {};
  for (const [key, options] of byKey) raw[key] = opts[(options[0] as Option).attributeName()];
  return raw;
}

function buildAwsProgram(deps: AwsCliDeps, job: { path: string; definition: JobDefinition } | undefined, onParsed: (parsed: ParsedAws) => void): Command {
  const program = new Command('sluice aws')
    .description(
      'Deploy and control a job on the cluster runtime: slots leased by "sluice worker" processes, checkpoints coordinated by Step Functions, all state in one DynamoDB control table. Region, credentials and endpoint come from the AWS SDK\'s default chains (AWS_REGION, AWS_ENDPOINT_URL, ...).',
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => deps.stdout(s), writeErr: (s) => deps.stderr(s) })
    .showHelpAfterError('(run "sluice aws --help" for usage)');

  const definition = job?.definition;
  const init = program
    .command('init')
    .summary('check a job, lay it out on P slots and write its config, control and lease items')
    .description(
      `Check ${definition === undefined ? 'a job' : `job "${definition.name}"`} for the cluster (every operator at P, no bounded source, every keyBy/rebalance/broadcast aligned or through --exchange-stream, two-phase-commit sinks with externalCommit), then write its items to the control table (creating the table when missing). Prints {"slots":[{"slot","keyGroups":[a,b]}],"edges":[{"id","mode"}]}. Running it again with the same settings changes nothing; other settings are refused (exit 2) unless --fresh.`,
    )
    .argument('<job>', 'path of the job module (.ts or .js)')
    .showHelpAfterError(job === undefined ? '(run "sluice aws init --help" for usage)' : `(run "sluice aws init ${job.path} --help" to list the flags)`);
  const initFlags = addFlags(init, AWS_INIT_FLAGS, 'Cluster flags:', awsFlagOptions);
  const jobFlags = definition === undefined ? new Map<string, Option[]>() : addFlags(init, definition.flags, `Job flags (${definition.name}):`, flagOptions);
  if (definition === undefined) init.addHelpText('after', '\nJob flags: "sluice aws init <job> --help" lists the flags of that job.');
  init.action((jobPath: string, _opts: unknown, command: Command) => {
    onParsed({ command: 'init', jobPath, cluster: rawValues(command, initFlags), job: rawValues(command, jobFlags) });
  });

  const status = program
    .command('status')
    .summary("show a job's config, checkpoints, coordinator and leases")
    .description("Read the job's items from the control table: its config, the control item (latest completed checkpoint, lease generation), the coordinator's state (last completed, in flight, history) and every slot's lease (owner, epoch, whether its counter moves).");
  const statusFlags = addFlags(status, AWS_STATUS_FLAGS, 'Flags:', awsFlagOptions);
  status.action((_opts: unknown, command: Command) => onParsed({ command: 'status', cluster: rawValues(command, statusFlags), job: {} }));

  for (const name of ['savepoint', 'stop'] as const) {
    const command = program
      .command(name)
      .summary(name === 'savepoint' ? 'take a savepoint of a cluster job' : 'stop a cluster job with a savepoint')
      .description(`${REQUEST_DESCRIPTIONS[name]} Waits (polling the request item) up to --timeout-ms.`);
    const flags = addFlags(command, AWS_REQUEST_FLAGS, 'Flags:', awsFlagOptions);
    command.action((_opts: unknown, c: Command) => onParsed({ command: name, cluster: rawValues(c, flags), job: {} }));
  }
  return program;
}

async function loadInitJob(deps: AwsCliDeps, path: string): Promise<JobDefinition> {
  let job: JobDefinition;
  try {
    job = await deps.loadJob(path);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`cannot load job module ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  checkFlagSpecs(job.name, job.flags, INIT_RESERVED_KEYS);
  return job;
}

/** Parses flag values, collecting every problem; a FlagValueError lists one sentence per flag. */
function parseAll(pairs: readonly [FlagSpecs, Record<string, RawFlagValue>][]): { values: Record<string, FlagValue>[]; problems: string[] } {
  const problems: string[] = [];
  const values = pairs.map(([specs, raw]) => {
    try {
      return parseFlagValues(specs, raw);
    } catch (err) {
      if (!(err instanceof FlagValueError)) throw err;
      problems.push(...err.problems);
      return {};
    }
  });
  return { values, problems };
}

const S3_LOCATION = /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/;

/** The deployment settings of `init`'s flags. */
function deploymentOf(flags: Record<string, FlagValue>, createdAt: number): ClusterDeployment {
  const exchangeStream = flags['exchangeStream'] as string | undefined;
  const restoreFrom = flags['restore'] as string | undefined;
  return {
    checkpointDir: flags['checkpointDir'] as string,
    ...(exchangeStream === undefined ? {} : { exchangeStream }),
    checkpointing: {
      intervalMs: flags['checkpointIntervalMs'] as number,
      timeoutMs: flags['checkpointTimeoutMs'] as number,
      tolerableFailures: flags['tolerableCheckpointFailures'] as number,
    },
    ...(restoreFrom === undefined ? {} : { restoreFrom }),
    leaseDurationMs: flags['leaseDurationMs'] as number,
    createdAt,
  };
}

async function runInit(parsed: ParsedAws, job: JobDefinition, deps: AwsCliDeps, print: (lines: string[]) => void): Promise<ExitCode> {
  const { values, problems } = parseAll([
    [AWS_INIT_FLAGS, parsed.cluster],
    [job.flags, parsed.job],
  ]);
  const [cluster = {}, jobFlags = {}] = values;
  const checkpointDir = cluster['checkpointDir'];
  if (typeof checkpointDir === 'string' && !S3_LOCATION.test(checkpointDir)) {
    problems.push(`--checkpoint-dir must be an S3 location s3://bucket/prefix (every worker and the coordinator reach it), got ${JSON.stringify(checkpointDir)}`);
  }
  if (cluster['restore'] === '') problems.push('--restore must not be empty');
  if (problems.length > 0) {
    print([...problems.map((p) => `error: ${p}`), `(run "sluice aws init ${parsed.jobPath ?? '<job>'} --help" to list the flags)`]);
    return ExitCode.usage;
  }
  const parallelism = cluster['parallelism'] as number;
  const exchangeStream = cluster['exchangeStream'] as string | undefined;
  const env = await buildJob(job, jobFlags, { parallelism, maxParallelism: cluster['maxParallelism'] as number });
  const plan = planSlots(buildPhysicalPlan(env.graph, env.options), { parallelism, ...(exchangeStream === undefined ? {} : { exchangeStream }) });
  const layout = `${JSON.stringify({ slots: plan.slots, edges: plan.edges.map((e) => ({ id: e.id, mode: e.mode })) })}\n`;
  if (cluster['dryRun'] === true) {
    deps.stdout(layout);
    print([`sluice aws init: dry run of job "${job.name}": ${plan.parallelism} slots, fingerprint ${plan.fingerprint.slice(0, 12)}; nothing written`]);
    return ExitCode.ok;
  }
  const jobId = cluster['jobId'] as string;
  const tableName = cluster['controlTable'] as string;
  const admin = openAdmin(deps, tableName, jobId);
  try {
    const outcome = await admin.init(clusterConfigItem(plan, deploymentOf(cluster, (deps.now ?? Date.now)())), { fresh: cluster['fresh'] === true });
    deps.stdout(layout);
    print([
      outcome === 'initialized'
        ? `sluice aws init: job "${jobId}" (${job.name}) written to table ${tableName}: ${plan.parallelism} slots, fingerprint ${plan.fingerprint.slice(0, 12)}`
        : `sluice aws init: job "${jobId}" is already deployed with these settings in table ${tableName}; nothing changed`,
    ]);
    return ExitCode.ok;
  } finally {
    admin.close();
  }
}

function openAdmin(deps: AwsCliDeps, tableName: string, jobId: string): JobAdmin {
  return deps.openJobAdmin?.({ tableName, jobId }) ?? new JobAdminTable({ tableName, jobId });
}

function requestedBy(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return hostname();
  }
}

async function runTargetCommand(parsed: ParsedAws, deps: AwsCliDeps, print: (lines: string[]) => void): Promise<ExitCode> {
  const specs = parsed.command === 'status' ? AWS_STATUS_FLAGS : AWS_REQUEST_FLAGS;
  const { values, problems } = parseAll([[specs, parsed.cluster]]);
  if (problems.length > 0) {
    print([...problems.map((p) => `error: ${p}`), `(run "sluice aws ${parsed.command} --help" for usage)`]);
    return ExitCode.usage;
  }
  const flags = values[0] ?? {};
  const now = deps.now ?? Date.now;
  const admin = openAdmin(deps, flags['controlTable'] as string, flags['jobId'] as string);
  try {
    if (parsed.command === 'status') {
      const status = await admin.status({ watchLeasesMs: flags['watchLeasesMs'] as number });
      deps.stdout(flags['json'] === true ? `${JSON.stringify(status)}\n` : formatClusterStatus(status, now()).map((l) => `${l}\n`).join(''));
      return status.config === undefined ? ExitCode.jobFailed : ExitCode.ok;
    }
    const kind: RequestItem['kind'] = parsed.command === 'stop' ? 'stop' : 'savepoint';
    const id = `${kind}-${now()}-${randomUUID().slice(0, 8)}`;
    await admin.request(kind, id, requestedBy());
    print([`sluice aws ${kind}: request ${id} queued; waiting for the coordinator`]);
    const answered = await admin.waitForRequest(id, { timeoutMs: flags['timeoutMs'] as number });
    deps.stdout(flags['json'] === true ? `${JSON.stringify(answered)}\n` : `${answered.result?.path ?? ''}\n`);
    return ExitCode.ok;
  } finally {
    admin.close();
  }
}

/**
 * `sluice aws init|status|savepoint|stop`. Returns the exit code: 0 done, 1 an AWS call or the request failed
 * (or status found no such job), 2 bad usage or configuration (including a stored config with other settings).
 */
export async function runAwsCli(argv: readonly string[], deps: AwsCliDeps): Promise<ExitCode> {
  const print = (lines: string[]): void => deps.stderr(lines.map((l) => `${l}\n`).join(''));
  const jobArg = argv[0] === 'init' ? findJobArgument(argv.slice(1), INIT_OPTIONS_WITH_VALUE) : undefined;
  let job: JobDefinition | undefined;
  if (jobArg !== undefined) {
    try {
      job = await loadInitJob(deps, jobArg);
    } catch (err) {
      print(formatFailure(jobArg, err));
      return ExitCode.usage;
    }
  }
  let parsed: ParsedAws | undefined;
  const program = buildAwsProgram(deps, job === undefined || jobArg === undefined ? undefined : { path: jobArg, definition: job }, (p) => {
    parsed = p;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    throw err;
  }
  const request = parsed;
  if (request === undefined) return ExitCode.ok;
  try {
    if (request.command !== 'init') return await runTargetCommand(request, deps, print);
    if (job === undefined || request.jobPath !== jobArg) {
      print([`error: give the job module right after "init": sluice aws init <job> [flags] (got ${JSON.stringify(request.jobPath)})`]);
      return ExitCode.usage;
    }
    return await runInit(request, job, deps, print);
  } catch (err) {
    print(request.command === 'init' && job !== undefined ? formatFailure(job.name, err) : commandFailure(request.command, err));
    return exitCodeOf(err);
  }
}

function commandFailure(command: AwsCommand, err: unknown): string[] {
  const message = err instanceof Error ? err.message : String(err);
  if (exitCodeOf(err) === ExitCode.usage) return [`error: ${message}`];
  const lines = [`error: sluice aws ${command}: ${message}`];
  if (!(err instanceof SluiceError) && err instanceof Error && err.stack !== undefined) lines.push(err.stack);
  return lines;
}
