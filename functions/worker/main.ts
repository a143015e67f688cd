// The cluster worker process (`sluice worker`, a long-lived Fargate task): the composition root that wires the
// checkpoint storage (S3), the control table's DynamoDB adapters, RocksDB state in --state-dir and the JSON event
// log around lib/runtime/cluster's ClusterWorker. Run directly (`node functions/worker/main.ts <job> [flags]`) it
// behaves as `sluice worker`.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../../lib/core/index.ts';
import { ExitCode } from '../../lib/cli/exit-codes.ts';
import type { WorkerLaunch } from '../../lib/cli/worker-command.ts';
import { defaultWorkerId } from '../../lib/connectors/aws/cluster/lease-keeper-options.ts';
import { buildPhysicalPlan } from '../../lib/graph/physical-plan.ts';
import { ClusterWorker } from '../../lib/runtime/cluster/cluster-worker.ts';
import { checkStoredConfig, leaseDurationFor } from '../../lib/runtime/cluster/stored-config-check.ts';
import { workerEventLine, type WorkerEvent } from '../../lib/runtime/cluster/worker-events.ts';
import { buildJob, loadJobModule } from '../../lib/runtime/load-job.ts';
import type { KeyedServices } from '../../lib/runtime/operator-chain.ts';
import type { SlotDirs } from '../../lib/runtime/cluster/slot-state-dirs.ts';
import type { ObjectStore } from '../../lib/storage/object-store.ts';
import { createWorkerAwsAdapters, createWorkerExchange, type WorkerAdapters } from './aws-adapters.ts';
import type { ExchangeTransport } from '../../lib/cluster/exchange/index.ts';
import type { ClusterConfigItem } from '../../lib/cluster/control-items.ts';
import { openWorkerObjectStore } from './object-store.ts';

/** How long a SIGTERM may take: ECS sends SIGKILL after the task's stopTimeout (at most 120 s). */
export const STOP_DEADLINE_MS = 110_000;

export interface WorkerIo {
  /** One JSON line per event. */
  stdout(text: string): void;
  stderr(text: string): void;
  /** The control table's adapters; onLeaseError reports a failed lease round as a `warning` event. @default the
   * DynamoDB ones (createWorkerAwsAdapters) */
  adapters?(workerId: string, onLeaseError: (error: unknown) => void): Promise<WorkerAdapters>;
  /** The checkpoint objects. @default openWorkerObjectStore(settings.checkpointDir) */
  store?: ObjectStore;
  /** The exchange over stream `stream` of P shards. @default the Kinesis one (createWorkerExchange), checked at start */
  exchange?(stream: string, parallelism: number): Promise<ExchangeTransport>;
  /** Keyed state of a slot. @default RocksDB in the slot's epoch directories */
  services?(dirs: SlotDirs): KeyedServices | Promise<KeyedServices>;
  /** Local disk for temp files. @default <os tmpdir>/sluice-worker */
  tempRoot?: string;
  /** Resolves when the worker should stop (SIGTERM). @default SIGTERM or SIGINT of this process */
  stopSignal?: Promise<void>;
  /** @default STOP_DEADLINE_MS */
  stopDeadlineMs?: number;
}

/** Runs one worker until SIGTERM (exit 0 once slots stopped and leases released), a halt (0), or a failure (1; 2 for configuration). */
export async function runWorker(launch: WorkerLaunch, io: WorkerIo): Promise<ExitCode> {
  const { settings } = launch;
  // A random part: a replacement container often has the old one's hostname and PID 1, and the same id would
  // reclaim the old incarnation's leases without waiting for them to expire.
  const workerId = settings.workerId ?? defaultWorkerId();
  const emit = (event: WorkerEvent): void => io.stdout(`${workerEventLine(event)}\n`);
  let worker: ClusterWorker;
  try {
    const onLeaseError = (error: unknown): void => emit({ event: 'warning', message: `lease round failed (tried again at the next round): ${describeError(error)}` });
    const adapters = await (io.adapters ?? ((id, onError) => createWorkerAwsAdapters({ settings, workerId: id, onLeaseError: onError })))(workerId, onLeaseError);
    const config = await adapters.control.readConfig();
    if (config === undefined) {
      throw new ConfigError(`job ${settings.jobId} has no config item in control table ${settings.controlTable}: deploy it first with \`sluice aws init\` (--job-id)`);
    }
    leaseDurationFor(config, settings); // a --lease-duration-ms other than the stored one: exit 2 (the adapters adopt the stored one)
    const job = await loadJobModule(launch.jobPath);
    // Every vertex runs at the deployed P: the plan is built the way `sluice aws init` built it.
    const env = await buildJob(job, launch.jobFlags, { parallelism: config.parallelism, maxParallelism: config.maxParallelism });
    const plan = buildPhysicalPlan(env.graph, env.options);
    const stream = exchangeStreamOf(settings.exchangeStream, config);
    const exchange = stream === undefined ? undefined : await (io.exchange ?? createWorkerExchange)(stream, config.parallelism);
    worker = new ClusterWorker({
      jobId: settings.jobId,
      plan,
      jobOptions: env.options,
      control: adapters.control,
      acks: adapters.acks,
      leases: adapters.leases,
      store: io.store ?? openWorkerObjectStore(settings.checkpointDir),
      stateRoot: settings.stateDir,
      tempRoot: io.tempRoot ?? join(tmpdir(), 'sluice-worker'),
      services: io.services ?? rocksDbSlotServices,
      controlPollMs: settings.controlPollMs,
      exchange,
      verifyConfig: (stored, p) => checkStoredConfig(stored, p, settings.checkpointDir),
      events: emit,
    });
  } catch (err) {
    io.stderr(`sluice worker: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof ConfigError ? ExitCode.usage : ExitCode.jobFailed;
  }
  const stopSignal = io.stopSignal ?? processStopSignal();
  const deadlineMs = io.stopDeadlineMs ?? STOP_DEADLINE_MS;
  // SIGTERM: stop the slots and release the leases, within the deadline (else exit 1: ECS would kill it anyway).
  const overdue = stopSignal.then(async () => {
    void worker.stop();
    await sleep(deadlineMs);
    io.stderr(`sluice worker: the slots did not stop within ${deadlineMs} ms of SIGTERM\n`);
    return ExitCode.jobFailed;
  });
  const outcome = worker.run().then(
    () => ExitCode.ok,
    async (err: unknown) => {
      io.stderr(`sluice worker: ${err instanceof Error ? err.message : String(err)}\n`);
      await Promise.race([worker.stop(), sleep(deadlineMs)]);
      return err instanceof ConfigError ? ExitCode.usage : ExitCode.jobFailed;
    },
  );
  return Promise.race([outcome, overdue]);
}

/**
 * The exchange stream: --exchange-stream, else the one `sluice aws init` stored when the job has exchange edges.
 * Another stream than the stored one is refused: slots would write where the other workers do not read.
 */
function exchangeStreamOf(flag: string | undefined, config: ClusterConfigItem): string | undefined {
  const stored = config.edges.some((e) => e.mode === 'exchange') ? config.exchangeStream : undefined;
  if (flag !== undefined && stored !== undefined && flag !== stored) {
    throw new ConfigError(`--exchange-stream ${flag} is not the exchange stream the job was deployed with (${stored}): pass --exchange-stream ${stored}, or deploy again with \`sluice aws init --exchange-stream ${flag} --fresh\``);
  }
  return flag ?? stored;
}

/** RocksDB in the slot's epoch directory, temp files on local disk; loaded only here (the native binding). */
async function rocksDbSlotServices(dirs: SlotDirs): Promise<KeyedServices> {
  const { rocksDbServices } = await import('../../lib/state/rocksdb/index.ts');
  return rocksDbServices({ stateDir: dirs.stateDir, tempDir: dirs.tempDir });
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // SDK errors carry their AWS error code in `name` (AccessDeniedException, ResourceNotFoundException, ...).
  return error.name !== 'Error' && !error.message.includes(error.name) ? `${error.name}: ${error.message}` : error.message;
}

function processStopSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
}

/** A pause that does not keep the process alive. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** `node functions/worker/main.ts <job> [flags]`: the same as `sluice worker <job> [flags]`. */
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { runCli } = await import('../../lib/cli/run-cli.ts');
  const { runOnThreads } = await import('../../lib/runtime/threads/thread-runner.ts');
  const stdout = (text: string): void => void process.stdout.write(text);
  const stderr = (text: string): void => void process.stderr.write(text);
  const code = await runCli(['worker', ...process.argv.slice(2)], {
    version: 'worker',
    loadJob: loadJobModule,
    runJob: runOnThreads,
    runWorker: (l) => runWorker(l, { stdout, stderr }),
    stdout,
    stderr,
  });
  process.exitCode = code;
}
