import { randomUUID } from 'node:crypto';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { JobFailedError } from '../../core/index.ts';
import type { JobOptions } from '../../api/job-options.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../graph/physical-plan.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import { buildJob, loadJobModule } from '../load-job.ts';
import { computeSplits } from '../in-thread-runner.ts';
import { crossThreadChannels } from '../task-deployment.ts';
import { summarize, type JobResult } from '../job-result.ts';
import type { TaskMetrics } from '../task-metrics.ts';
import {
  DEFAULT_RESTART_STRATEGY,
  checkRestartStrategy,
  type CheckpointingConfig,
  type RestartStrategy,
} from '../checkpointing/checkpointing-config.ts';
import { prepareCheckpointing } from '../checkpointing/prepare-checkpointing.ts';
import { EmbeddedCheckpointDriver } from '../checkpointing/embedded-driver.ts';
import { allTasks, runAttempts, sourceTasks } from '../checkpointing/attempts.ts';
import { RemoteTaskError } from './remote-error.ts';
import type { CoordinatorMessage, WorkerInit, WorkerMessage } from './protocol.ts';

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
  /** Progress lines (restores, restarts, skipped checkpoints). @default stderr */
  log?: (line: string) => void;
}

const BOOTSTRAP = fileURLToPath(new URL('./worker-bootstrap.mjs', import.meta.url));

interface AttemptSetup {
  readonly options: ThreadedRunOptions;
  readonly plan: PhysicalPlan;
  readonly splits: Map<number, SourceSplit[]>;
  readonly restoreFrom: CheckpointMetadata | undefined;
  /** Receives the workers' checkpoint messages; undefined without checkpointing. */
  readonly driver: EmbeddedCheckpointDriver | undefined;
  /** Filled with a function that sends a message to every worker. */
  readonly broadcast: { send: (message: CoordinatorMessage) => void };
}

/**
 * Runs a job module on worker threads: subtask i of every operator runs on thread i (so parallelism N uses N
 * threads), with channels between threads over MessagePorts. The first failing task fails the attempt and every
 * thread is stopped; with checkpointing, the job restarts from its latest complete checkpoint.
 */
export async function runOnThreads(options: ThreadedRunOptions): Promise<JobResult> {
  const started = Date.now();
  const job = await loadJobModule(options.modulePath);
  const env = await buildJob(job, options.flags, options.jobOptions);
  const plan = buildPhysicalPlan(env.graph, env.options);
  const splits = await computeSplits(plan);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const config = options.checkpointing;
  if (config === undefined) {
    const metrics = await runAttempt({ options, plan, splits, restoreFrom: undefined, driver: undefined, broadcast: { send() {} } });
    return summarize(started, metrics);
  }
  const prepared = await prepareCheckpointing(config, plan, log);
  let lastCheckpointId = prepared.lastCheckpointId;
  return runAttempts({
    strategy: checkRestartStrategy(options.restart ?? DEFAULT_RESTART_STRATEGY),
    storage: prepared.storage,
    first: prepared.latest,
    log,
    attempt: async (restoreFrom) => {
      if (restoreFrom !== undefined) log(`restored from checkpoint ${restoreFrom.checkpointId}`);
      const broadcast = { send: (_message: CoordinatorMessage) => {} };
      const driver = new EmbeddedCheckpointDriver({
        options: config,
        storage: prepared.storage,
        tasks: allTasks(plan),
        sourceTasks: sourceTasks(plan),
        maxParallelism: plan.maxParallelism,
        lastCheckpointId: Math.max(lastCheckpointId, restoreFrom?.checkpointId ?? 0),
        retainedCheckpointIds: (await prepared.storage.list())
          .filter((c) => c.status === 'complete' && !c.metadata.savepoint)
          .map((c) => c.checkpointId),
        dispatch: {
          trigger: (barrier) => broadcast.send({ type: 'trigger', barrier }),
          notifyComplete: (checkpointId, final) => broadcast.send({ type: 'complete', checkpointId, final }),
        },
        log,
      });
      try {
        return summarize(started, await runAttempt({ options, plan, splits, restoreFrom, driver, broadcast }));
      } finally {
        await driver.stop();
        lastCheckpointId = driver.lastCheckpointId;
      }
    },
  });
}

/** Starts one worker per thread, wires their channels, and waits until all are done or one fails. */
async function runAttempt(setup: AttemptSetup): Promise<TaskMetrics[]> {
  const { options, plan, driver } = setup;
  const threads = Math.max(...plan.vertices.map((v) => v.parallelism));
  const portsOf: Record<string, MessagePort>[] = Array.from({ length: threads }, () => ({}));
  for (const ch of crossThreadChannels(plan, (s) => s)) {
    const { port1, port2 } = new MessageChannel();
    portsOf[ch.producer]![ch.key] = port1;
    portsOf[ch.consumer]![ch.key] = port2;
  }
  const attempt = randomUUID();
  const workers: Worker[] = [];
  setup.broadcast.send = (message) => {
    for (const w of workers) w.postMessage(message);
  };
  const reports = Array.from({ length: threads }, (_, thread) => {
    const init: WorkerInit = {
      modulePath: options.modulePath,
      flags: options.flags,
      jobOptions: options.jobOptions,
      thread,
      attempt,
      fingerprint: plan.fingerprint,
      splits: [...setup.splits.entries()],
      ports: portsOf[thread]!,
      checkpointDir: options.checkpointing?.dir,
      restoreFrom: setup.restoreFrom,
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
        switch (message.type) {
          case 'done':
            settled = true;
            resolve(message.metrics);
            break;
          case 'failed':
            settled = true;
            reject(new RemoteTaskError(message.error));
            break;
          case 'ack':
            driver?.ack(message.checkpointId, message.handle);
            break;
          case 'decline':
            driver?.decline(message.checkpointId, message.task, message.reason);
            break;
          case 'sourceFinished':
            driver?.sourceFinished(message.task);
            break;
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

  try {
    return (await Promise.all(reports)).flat();
  } catch (err) {
    if (err instanceof JobFailedError) throw err;
    throw new JobFailedError(`job failed: ${err instanceof Error ? err.message : String(err)}`, err);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
