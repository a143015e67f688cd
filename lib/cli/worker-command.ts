import { Option, type Command } from 'commander';
import { ConfigError } from '../core/index.ts';
import type { FlagValue, RawFlagValue } from './flag-values.ts';

/**
 * `sluice worker <job> [job flags] --job-id ID --control-table T --checkpoint-dir s3://B/P --state-dir DIR
 * [--exchange-stream S] [--max-slots N] [--worker-id ID] [--lease-duration-ms N] [--control-poll-ms N]`: one
 * long-lived worker process of a cluster job. Every flag can also come from the environment as SLUICE_<FLAG>
 * (SLUICE_JOB_ID, SLUICE_CONTROL_TABLE, ...), which is how a Fargate task definition passes them.
 */

/** The worker's flags as parsed and checked (the job's own flags are checked by parseFlagValues). */
export interface WorkerSettings {
  readonly jobId: string;
  readonly controlTable: string;
  /** `s3://bucket/prefix` (a local folder for tests and `npm run dev:cluster` with a folder store). */
  readonly checkpointDir: string;
  /** RocksDB databases: the shared file system (EFS) or the task's own disk. */
  readonly stateDir: string;
  readonly exchangeStream: string | undefined;
  /** At most this many slots on this worker. @default no limit (the lease keeper balances to ceil(P / workers)) */
  readonly maxSlots: number | undefined;
  /** @default `<hostname>-<pid>` */
  readonly workerId: string | undefined;
  /** @default the job's stored `config.leaseDurationMs`, else 10000 */
  readonly leaseDurationMs: number;
  /** Set when --lease-duration-ms (or SLUICE_LEASE_DURATION_MS) was given: it must then match the stored duration. */
  readonly leaseDurationMsGiven?: true;
  /** @default 500 */
  readonly controlPollMs: number;
}

/** What `sluice worker` was asked to do, before the values are checked. */
export interface WorkerRequest {
  readonly jobPath: string;
  readonly worker: Record<string, RawFlagValue>;
  readonly job: Record<string, RawFlagValue>;
}

/** What a composition root runs: the checked settings, the job module and its parsed flags. */
export interface WorkerLaunch {
  readonly jobPath: string;
  readonly jobFlags: Record<string, FlagValue>;
  readonly settings: WorkerSettings;
}

export const WORKER_DEFAULTS = Object.freeze({ leaseDurationMs: 10_000, controlPollMs: 500 });

interface WorkerFlag {
  readonly flag: string;
  readonly key: keyof WorkerSettings;
  readonly value: string;
  readonly description: string;
  readonly required?: boolean;
}

const WORKER_FLAGS: readonly WorkerFlag[] = [
  { flag: '--job-id', key: 'jobId', value: '<id>', description: 'the cluster job, as `sluice aws init --job-id` deployed it', required: true },
  { flag: '--control-table', key: 'controlTable', value: '<table>', description: "the job's DynamoDB control table (leases, acks, control)", required: true },
  { flag: '--checkpoint-dir', key: 'checkpointDir', value: '<uri>', description: 'checkpoint storage: s3://bucket/prefix', required: true },
  {
    flag: '--state-dir',
    key: 'stateDir',
    value: '<dir>',
    description: 'RocksDB state: a shared file system (EFS: any worker can recover a slot locally) or the task disk; temp files always go to the local temp folder',
    required: true,
  },
  { flag: '--exchange-stream', key: 'exchangeStream', value: '<stream>', description: 'the internal Kinesis stream of exchange edges, exactly P shards (default: the one `sluice aws init` stored, when the job has exchange edges)' },
  { flag: '--max-slots', key: 'maxSlots', value: '<n>', description: 'run at most this many slots on this worker (default: balanced, ceil(P / workers))' },
  { flag: '--worker-id', key: 'workerId', value: '<id>', description: 'this worker in the lease table (default: <hostname>-<pid>)' },
  { flag: '--lease-duration-ms', key: 'leaseDurationMs', value: '<ms>', description: `a lease whose counter did not move for this long may be taken; must match the duration \`sluice aws init\` stored (default: the stored one, else ${WORKER_DEFAULTS.leaseDurationMs})` },
  { flag: '--control-poll-ms', key: 'controlPollMs', value: '<ms>', description: `how often the control item is read (default ${WORKER_DEFAULTS.controlPollMs})` },
];

/** The worker's own flags that take a value (`findJobArgument` skips their values). */
export const WORKER_OPTIONS_WITH_VALUE: ReadonlySet<string> = new Set(WORKER_FLAGS.map((f) => f.flag));

/** `SLUICE_JOB_ID` for `--job-id`. */
export function envName(flag: string): string {
  return `SLUICE_${flag.slice(2).replace(/-/g, '_').toUpperCase()}`;
}

/** Adds the `worker` command; `addJobFlags` adds the job's flags to it and returns a reader of their raw values. */
export function addWorkerCommand(
  program: Command,
  addJobFlags: (command: Command) => (command: Command) => Record<string, RawFlagValue>,
  onWorker: (request: WorkerRequest) => void,
): void {
  const worker = program
    .command('worker')
    .summary('run a worker process of a cluster job (slots leased from the control table)')
    .description(
      'Run one worker of a cluster job: take slot leases in the control table, run each slot (subtask s of every operator) restored from the latest completed checkpoint, ack the checkpoints the coordinator triggers. Prints one JSON line per event (lease-acquired, lease-lost, slot-started, ack, fenced, slot-failed, released). Exits 0 after SIGTERM (slots stopped, leases released), 1 on failure, 2 on bad usage. Every flag can also be given as SLUICE_<FLAG> in the environment (SLUICE_JOB_ID, SLUICE_CONTROL_TABLE, ...).',
    )
    .argument('<job>', 'path of the job module (.ts or .js)')
    .showHelpAfterError('(run "sluice worker <job> --help" for usage)');
  for (const f of WORKER_FLAGS) {
    const option = new Option(`${f.flag} ${f.value}`, f.description).env(envName(f.flag)).helpGroup('Worker flags:');
    worker.addOption(f.required === true ? option.makeOptionMandatory() : option);
  }
  const readJobFlags = addJobFlags(worker);
  worker.action((jobPath: string, _opts: unknown, command: Command) => {
    const opts = command.opts<Record<string, RawFlagValue>>();
    onWorker({ jobPath, worker: Object.fromEntries(WORKER_FLAGS.map((f) => [f.key, opts[f.key]])), job: readJobFlags(command) });
  });
}

/** Checks the worker's flag values; ConfigError with one sentence per bad flag, each naming it. */
export function parseWorkerSettings(raw: Record<string, RawFlagValue>): WorkerSettings {
  const problems: string[] = [];
  const text = (key: keyof WorkerSettings): string | undefined => {
    const value = raw[key];
    return typeof value === 'string' && value.trim().length > 0 ? value.trim() : undefined;
  };
  const integer = (f: WorkerFlag, min: number): number | undefined => {
    const value = text(f.key);
    if (value === undefined) return undefined;
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min) {
      problems.push(`${f.flag} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
      return undefined;
    }
    return n;
  };
  const flag = (key: keyof WorkerSettings): WorkerFlag => WORKER_FLAGS.find((f) => f.key === key)!;
  for (const f of WORKER_FLAGS) {
    if (f.required === true && text(f.key) === undefined) problems.push(`${f.flag} must not be empty (or set ${envName(f.flag)})`);
  }
  const checkpointDir = text('checkpointDir');
  if (checkpointDir !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(checkpointDir) && !checkpointDir.startsWith('s3://')) {
    problems.push(`--checkpoint-dir must be s3://bucket/prefix (or a local folder), got ${JSON.stringify(checkpointDir)}`);
  }
  const maxSlots = integer(flag('maxSlots'), 1);
  const leaseDurationMs = integer(flag('leaseDurationMs'), 300);
  const controlPollMs = integer(flag('controlPollMs'), 10);
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return {
    jobId: text('jobId')!,
    controlTable: text('controlTable')!,
    checkpointDir: checkpointDir!,
    stateDir: text('stateDir')!,
    exchangeStream: text('exchangeStream'),
    maxSlots,
    workerId: text('workerId'),
    leaseDurationMs: leaseDurationMs ?? WORKER_DEFAULTS.leaseDurationMs,
    ...(leaseDurationMs === undefined ? {} : { leaseDurationMsGiven: true as const }),
    controlPollMs: controlPollMs ?? WORKER_DEFAULTS.controlPollMs,
  };
}
