import { operatorStateRecords } from '../../graph/operator-records.ts';
import { availableParallelism } from 'node:os';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { assertNotFenced, JobFailedError, type FencingToken } from '../../core/index.ts';
import type { JobOptions } from '../../contracts/job-options.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../graph/physical-plan.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import { buildJob, loadJobModule } from '../load-job.ts';
import { computeSplits } from '../in-thread-runner.ts';
import { crossWorkerChannels } from '../channel-wiring.ts';
import { placementOf, placementTable, roundRobinPlacement, workerThreadCount, type PlacementTable } from '../placement.ts';
import { summarize, type JobResult } from '../job-result.ts';
import type { TaskMetrics } from '../task-metrics.ts';
import {
  DEFAULT_RESTART_STRATEGY,
  checkRestartStrategy,
  type CheckpointingConfig,
  type RestartStrategy,
} from '../checkpoint-driver/checkpointing-config.ts';
import {
  prepareCheckpointing,
  restartOrigin,
  restoredFromLine,
  retainedCheckpointIds,
  type PreparedCheckpointing,
} from '../restore/prepare-checkpointing.ts';
import { EmbeddedCheckpointDriver } from '../checkpoint-driver/embedded-driver.ts';
import type { CheckpointDriver } from '../checkpoint-driver/checkpoint-driver.ts';
import { allTasks, runAttempts, sourceTasks } from '../restarts/attempts.ts';
import { writeRestoreMarker } from '../restore/restore-marker.ts';
import { markerAfterStop } from '../../checkpoint/restore-plan.ts';
import type { JobControl, SavepointView } from '../control/job-control.ts';
import { JobNotRunningError } from '../control/control-errors.ts';
import { RemoteTaskError } from './remote-error.ts';
import { AttemptMonitor } from './attempt-monitor.ts';
import { ThreadedJob } from './threaded-job.ts';
import type { CoordinatorMessage, WorkerInit, WorkerMessage } from './protocol.ts';
import { AlignmentGroups, alignmentMembers } from '../alignment/alignment-groups.ts';
import { compileStateBackendConfig, type StateBackendConfig } from '../state-backend-config.ts';
import { lockJobFolders } from '../job-folder-locks.ts';
import { registeredStorageSchemes } from '../../storage/storage-locations.ts';
import { highestRecordedEpoch, issueFencingToken } from '../fencing-epochs.ts';

export interface ThreadedRunOptions {
  /** Path of the job module (its default export is a defineJob(...) job). */
  modulePath: string;
  /** Parsed job flags, passed to build() in every thread. */
  flags: Record<string, unknown>;
  jobOptions: JobOptions;
  /** Take checkpoints; the same `dir` on a later run resumes from the latest complete one. @default none */
  checkpointing?: CheckpointingConfig;
  /** With checkpointing: how failed attempts restart. @default 3 attempts, 1 s apart */
  restart?: RestartStrategy;
  /** Where keyed state lives. @default in memory */
  stateBackend?: StateBackendConfig;
  /**
   * Worker threads that run the subtasks: subtask s of every operator runs on thread s % threads. Above the
   * highest parallelism it is lowered to it (a thread would have nothing to run).
   * @default min(highest parallelism, os.availableParallelism())
   */
  threads?: number;
  /** Progress lines (restores, restarts, skipped checkpoints). @default stderr */
  log?: (line: string) => void;
  /**
   * Called once the job is checked and about to start, with its controls (status, checkpoint history,
   * savepoints, stop); `sluice run` serves them over REST. The job starts when the returned promise resolves.
   */
  onStart?: (job: JobControl) => void | Promise<void>;
}

const BOOTSTRAP = fileURLToPath(new URL('./worker-bootstrap.mjs', import.meta.url));

interface AttemptSetup {
  readonly options: ThreadedRunOptions;
  readonly plan: PhysicalPlan;
  readonly splits: Map<number, SourceSplit[]>;
  readonly restoreFrom: CheckpointMetadata | undefined;
  /** Where `restoreFrom`'s files are when they are not in the checkpoint folder (a savepoint): a path or a URI. */
  readonly restoreLocation: string | undefined;
  /** Receives the workers' checkpoint messages; undefined without checkpointing. */
  readonly driver: CheckpointDriver | undefined;
  /** Filled with a function that sends a message to every worker. */
  readonly broadcast: { send: (message: CoordinatorMessage) => void };
  readonly job: ThreadedJob;
  readonly restoredFrom: string | undefined;
  /** The token of this attempt, given to every worker thread. */
  readonly fencing: FencingToken;
  /** The worker thread of every task. */
  readonly placement: PlacementTable;
}

interface AttemptOutcome {
  readonly metrics: TaskMetrics[];
  /** Set when the attempt was stopped with this savepoint. */
  readonly savepoint?: SavepointView;
}

/**
 * Runs a job module on worker threads: subtask i of every operator runs on thread i % threads (by default one
 * thread per processor, at most one per subtask index), with in-memory channels within a thread and MessagePorts
 * between threads. The first failing task fails the attempt and every
 * thread is stopped; with checkpointing, the job restarts from its latest complete checkpoint. A stop with a
 * savepoint ends the job early, successfully.
 */
export async function runOnThreads(options: ThreadedRunOptions): Promise<JobResult> {
  const started = Date.now();
  const definition = await loadJobModule(options.modulePath);
  const env = await buildJob(definition, options.flags, options.jobOptions);
  const plan = buildPhysicalPlan(env.graph, env.options);
  const splits = await computeSplits(plan);
  const threads = workerThreadCount(plan, availableParallelism(), options.threads);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const config = options.checkpointing;
  const stateBackend = compileStateBackendConfig(options.stateBackend);
  // Before anything reads or cleans up the folders, and before the REST API records itself in the checkpoint folder.
  const locks = await lockJobFolders({
    checkpointDir: config?.dir,
    stateDir: stateBackend.kind === 'rocksdb' ? stateBackend.dir : undefined,
  });
  try {
    return await runLocked(options, definition.name, { plan, splits, threads }, started, env.options.parallelism, log);
  } finally {
    await locks.release();
  }
}

/** What every attempt of a run deploys: the plan, its splits and the worker threads that run it. */
interface Deployment {
  readonly plan: PhysicalPlan;
  readonly splits: Map<number, SourceSplit[]>;
  readonly threads: number;
}

async function runLocked(
  options: ThreadedRunOptions,
  name: string,
  deployment: Deployment,
  started: number,
  parallelism: number,
  log: (line: string) => void,
): Promise<JobResult> {
  const { plan, splits } = deployment;
  const placement = placementTable(plan, roundRobinPlacement(deployment.threads));
  const config = options.checkpointing;
  const prepared = config === undefined ? undefined : await prepareCheckpointing(config, plan, log);
  const job = new ThreadedJob({
    name,
    plan,
    parallelism,
    workerThreads: deployment.threads,
    startTime: started,
    checkpointing:
      config === undefined || prepared === undefined
        ? null
        : { dir: config.dir, intervalMs: config.intervalMs, savepointDir: prepared.savepoints.location },
  });
  await options.onStart?.(job);
  try {
    const outcome =
      config === undefined || prepared === undefined
        ? await runAttempt({ options, plan, splits, placement, restoreFrom: undefined, restoreLocation: undefined, driver: undefined, broadcast: { send() {} }, job, restoredFrom: undefined, fencing: issueFencingToken(undefined) })
        : await runWithCheckpoints(options, config, prepared, plan, splits, placement, job, log);
    job.ended(outcome.metrics, outcome.savepoint);
    const result = summarize(started, outcome.metrics);
    return outcome.savepoint === undefined ? result : { ...result, stoppedWithSavepoint: outcome.savepoint.path };
  } catch (err) {
    job.failed();
    throw err;
  }
}

function runWithCheckpoints(
  options: ThreadedRunOptions,
  config: CheckpointingConfig,
  prepared: PreparedCheckpointing,
  plan: PhysicalPlan,
  splits: Map<number, SourceSplit[]>,
  placement: PlacementTable,
  job: ThreadedJob,
  log: (line: string) => void,
): Promise<AttemptOutcome> {
  let lastCheckpointId = prepared.lastCheckpointId;
  let previous: CheckpointDriver | undefined;
  let fencing: FencingToken | undefined;
  return runAttempts({
    strategy: checkRestartStrategy(options.restart ?? DEFAULT_RESTART_STRATEGY),
    ...restartOrigin(prepared),
    log,
    attempt: async (restoreFrom) => {
      const restoredFrom = restoreFrom === undefined ? undefined : restoredFromLine(prepared, restoreFrom);
      if (restoredFrom !== undefined) log(restoredFrom);
      // Epochs only grow: a restart goes one above the previous attempt, the first attempt above what storage records.
      fencing = issueFencingToken(fencing, fencing === undefined ? await highestRecordedEpoch(prepared.storage, prepared.external?.metadata) : -1);
      await prepared.storage.fence(fencing);
      const broadcast = { send: (_message: CoordinatorMessage) => {} };
      const driver: CheckpointDriver = new EmbeddedCheckpointDriver({
        fencing,
        options: config,
        storage: prepared.storage,
        savepoints: prepared.savepoints,
        // The next run with this checkpoint folder continues from the savepoint, not from an older checkpoint.
        beforeStop: (savepoint) => writeRestoreMarker(prepared.storage.records, markerAfterStop(savepoint)),
        tasks: allTasks(plan),
        sourceTasks: sourceTasks(plan),
        maxParallelism: plan.maxParallelism,
        lastCheckpointId: Math.max(lastCheckpointId, restoreFrom?.checkpointId ?? 0),
        retainedCheckpointIds: await retainedCheckpointIds(prepared.storage),
        operators: operatorStateRecords(plan),
        history: previous?.historyState,
        savepointPaths: previous?.savepointPaths,
        dispatch: {
          trigger: (barrier) => broadcast.send({ type: 'trigger', barrier }),
          notifyComplete: (checkpointId, final) => broadcast.send({ type: 'complete', checkpointId, final }),
        },
        log,
      });
      previous = driver;
      const restoreLocation = restoreFrom !== undefined && restoreFrom === prepared.external?.metadata ? prepared.external.location : undefined;
      try {
        return await runAttempt({ options, plan, splits, placement, restoreFrom, restoreLocation, driver, broadcast, job, restoredFrom, fencing });
      } catch (err) {
        job.attemptFailed();
        throw err;
      } finally {
        await driver.stop();
        lastCheckpointId = driver.lastCheckpointId;
      }
    },
  });
}

/**
 * Starts one worker per thread, wires their channels, and waits until all are done or one fails, or until a stop
 * with a savepoint ends the attempt.
 */
async function runAttempt(setup: AttemptSetup): Promise<AttemptOutcome> {
  const { options, plan, driver } = setup;
  const threads = 1 + Math.max(0, ...setup.placement.flat());
  const portsOf: Record<string, MessagePort>[] = Array.from({ length: threads }, () => ({}));
  for (const ch of crossWorkerChannels(plan, placementOf(setup.placement))) {
    const { port1, port2 } = new MessageChannel();
    portsOf[ch.producerWorker]![ch.key] = port1;
    portsOf[ch.consumerWorker]![ch.key] = port2;
  }
  const workers: Worker[] = [];
  setup.broadcast.send = (message) => {
    for (const w of workers) w.postMessage(message);
  };
  // The coordinating thread aligns watermarks as Flink's SourceCoordinator does: workers report, it sends each new
  // minimum of a group to every worker.
  const alignment = new AlignmentGroups(alignmentMembers(plan));
  const monitor = new AttemptMonitor(threads, (thread, message) => workers[thread]?.postMessage(message));
  let stopWith: (outcome: AttemptOutcome) => void = () => {};
  const stopped = new Promise<AttemptOutcome>((resolve) => (stopWith = resolve));
  const reports = Array.from({ length: threads }, (_, thread) => {
    const init: WorkerInit = {
      modulePath: options.modulePath,
      flags: options.flags,
      jobOptions: options.jobOptions,
      thread,
      fencing: setup.fencing,
      placement: setup.placement,
      fingerprint: plan.fingerprint,
      splits: [...setup.splits.entries()],
      ports: portsOf[thread]!,
      checkpointDir: options.checkpointing?.dir,
      storageSchemes: registeredStorageSchemes(),
      stateBackend: compileStateBackendConfig(options.stateBackend),
      restoreFrom: setup.restoreFrom,
      restoreLocation: setup.restoreLocation,
    };
    const worker = new Worker(BOOTSTRAP, {
      workerData: init,
      transferList: Object.values(portsOf[thread]!),
      // A larger young generation: batches are short-lived garbage, and scavenges dominate otherwise.
      resourceLimits: { maxYoungGenerationSizeMb: 16 },
    });
    workers.push(worker);
    return new Promise<TaskMetrics[]>((resolve, reject) => {
      let settled = false;
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'ack' || message.type === 'decline') {
          // Only this attempt's workers hold this port; a stale token here means a thread runs with the wrong one.
          try {
            assertNotFenced('checkpoint coordinator', setup.fencing, message.fencing);
          } catch (err) {
            settled = true;
            reject(err);
            return;
          }
        }
        switch (message.type) {
          case 'done':
            settled = true;
            monitor.onDone(thread, message.metrics);
            resolve(message.metrics);
            break;
          case 'failed':
            settled = true;
            reject(new RemoteTaskError(message.error));
            break;
          case 'ack':
            driver?.ack(message.checkpointId, message.handle, message.fencing);
            break;
          case 'decline':
            driver?.decline(message.checkpointId, message.task, message.reason, message.fencing);
            break;
          case 'sourceFinished':
            driver?.sourceFinished(message.task);
            break;
          case 'notified':
            monitor.onNotified(thread, message.checkpointId);
            break;
          case 'metrics':
            monitor.onMetrics(thread, message.requestId, message.metrics);
            break;
          case 'alignment': {
            const minimum = alignment.report(message.group, message.member, message.watermark);
            if (minimum !== undefined) setup.broadcast.send({ type: 'alignment', group: message.group, minimum });
            break;
          }
        }
      });
      worker.once('error', (err) => {
        settled = true;
        reject(err);
      });
      worker.once('exit', (code) => {
        if (!settled) reject(new JobFailedError(`worker thread ${thread} exited with code ${code} before reporting`, undefined));
      });
    });
  });
  setup.job.attemptStarted(
    { driver, notified: (id) => monitor.notified(id), metrics: () => monitor.metrics(), stop: (savepoint, metrics) => stopWith({ metrics, savepoint }) },
    setup.restoredFrom,
  );

  try {
    // Failing checkpoint storage fails the attempt even while every task still runs (or waits for its final checkpoint).
    const checkpointingFailed = driver?.failed ?? new Promise<never>(() => {});
    return await Promise.race([Promise.all(reports).then((metrics) => ({ metrics: metrics.flat() })), stopped, checkpointingFailed]);
  } catch (err) {
    // A task that fails after the stop's savepoint went to the sinks changes nothing: restoring it commits again.
    const savepoint = driver?.stoppedWithSavepoint;
    if (savepoint !== undefined) return { metrics: await monitor.metrics(), savepoint };
    if (err instanceof JobFailedError) throw err;
    throw new JobFailedError(`job failed: ${err instanceof Error ? err.message : String(err)}`, err);
  } finally {
    monitor.close(new JobNotRunningError('the job failed or restarted before every sink had committed the savepoint'));
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
