import { operatorStateRecords } from '../graph/operator-records.ts';
import { systemClock, type Clock } from '../core/index.ts';
import type { StreamEnvironment } from '../api/environment.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../graph/physical-plan.ts';
import type { SourceSplit } from '../connectors/source.ts';
import type { KeyedServices } from './operator-chain.ts';
import { NO_CHECKPOINTS } from './checkpoint-driver/participant.ts';
import { deployTasks, staticSplitEnumerator, type DeployedTask } from './task-deployment.ts';
import { ThreadChannelFactory } from './channels/thread-channel-factory.ts';
import { memoryServices } from './default-services.ts';
import { runTasks } from './run-tasks.ts';
import { summarize, type JobResult } from './job-result.ts';
import { DEFAULT_RESTART_STRATEGY, checkRestartStrategy, type CheckpointingConfig, type RestartStrategy } from './checkpoint-driver/checkpointing-config.ts';
import {
  prepareCheckpointing,
  restartOrigin,
  restoreReader,
  restoredFromLine,
  retainedCheckpointIds,
} from './restore/prepare-checkpointing.ts';
import { EmbeddedCheckpointDriver } from './checkpoint-driver/embedded-driver.ts';
import type { CheckpointDriver } from './checkpoint-driver/checkpoint-driver.ts';
import type { FencingToken } from '../core/fencing.ts';
import { CheckpointHub } from './checkpoint-driver/checkpoint-hub.ts';
import { loadRestoredJob, type RestoredJob } from './restore/restore-plan.ts';
import { lockJobFolders } from './job-folder-locks.ts';
import { allTasks, runAttempts, sourceTasks } from './restarts/attempts.ts';
import { AlignmentGroups, alignmentMembers } from './alignment/alignment-groups.ts';
import { highestRecordedEpoch, issueFencingToken } from './fencing-epochs.ts';
import { LocalAlignmentLink } from './alignment/alignment-link.ts';

export interface InThreadRunOptions {
  /** Processing-time clock. @default the system clock */
  clock?: Clock;
  /** State backend and timers of keyed operators. @default in-memory */
  services?: KeyedServices;
  /** Take checkpoints; the same `dir` on a later run resumes from the latest complete one. @default none */
  checkpointing?: CheckpointingConfig;
  /** With checkpointing: how failed attempts restart. @default 3 attempts, 1 s apart */
  restart?: RestartStrategy;
  /** Progress lines (restores, restarts, skipped checkpoints) and the tasks' warnings (late records dropped). @default stderr */
  log?: (line: string) => void;
}

/** Computes each source vertex's splits once, before any task starts. */
export async function computeSplits(plan: PhysicalPlan): Promise<Map<number, SourceSplit[]>> {
  const splits = new Map<number, SourceSplit[]>();
  for (const vertex of plan.vertices) {
    if (vertex.source !== undefined) {
      splits.set(vertex.id, await vertex.source.source.createSplits({ parallelism: vertex.parallelism }));
    }
  }
  return splits;
}

/**
 * Runs the whole job in the calling thread: every subtask is a task on this event loop, channels are in-memory
 * queues. Parallelism, partitioning, watermarks, backpressure and checkpoints behave as with worker threads; only
 * the cores used differ. Jobs that capture in-memory data (collection sources, collect sinks) run this way.
 */
export async function runInThisThread(env: StreamEnvironment, options: InThreadRunOptions = {}): Promise<JobResult> {
  env.validate();
  const started = Date.now();
  const plan = buildPhysicalPlan(env.graph, env.options);
  const clock = options.clock ?? systemClock;
  const services = options.services ?? memoryServices(() => clock.now());
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const splits = await computeSplits(plan);
  // One worker (this thread) runs every task, so every channel is an in-memory queue.
  const base = { plan, options: env.options, worker: 0, placement: () => 0, services, clock, warn: log };
  const perDeployment = () => ({
    channels: new ThreadChannelFactory(0, new Map(), env.options.channelCapacity),
    splits: staticSplitEnumerator(plan, splits),
  });
  // Each attempt aligns afresh: the reports of a failed attempt's tasks say nothing about the next one's.
  const alignment = () => new LocalAlignmentLink(new AlignmentGroups(alignmentMembers(plan)));

  const config = options.checkpointing;
  if (config === undefined) {
    const tasks = deployTasks({ ...base, ...perDeployment(), checkpoints: NO_CHECKPOINTS, fencing: issueFencingToken(undefined), alignment: alignment() });
    await runTasks(tasks);
    return summarize(started, tasks.map((t) => t.metrics));
  }
  // Keyed state here is the caller's (services); only the checkpoint folder is this runner's to lock.
  const locks = await lockJobFolders({ checkpointDir: config.dir, stateDir: undefined });
  try {
    return await runCheckpointed(config, plan, options, log, (restored, hub, fencing) =>
      deployTasks({ ...base, ...perDeployment(), checkpoints: hub, fencing, restored, alignment: alignment() }), started);
  } finally {
    await locks.release();
  }
}

async function runCheckpointed(
  config: CheckpointingConfig,
  plan: PhysicalPlan,
  options: InThreadRunOptions,
  log: (line: string) => void,
  deploy: (restored: RestoredJob | undefined, hub: CheckpointHub, fencing: FencingToken) => DeployedTask[],
  started: number,
): Promise<JobResult> {
  const prepared = await prepareCheckpointing(config, plan, log);
  let lastCheckpointId = prepared.lastCheckpointId;
  const allVertices = new Set(plan.vertices.map((v) => v.id));
  let fencing: FencingToken | undefined;
  return runAttempts({
    strategy: checkRestartStrategy(options.restart ?? DEFAULT_RESTART_STRATEGY),
    ...restartOrigin(prepared),
    log,
    attempt: async (restoreFrom) => {
      if (restoreFrom !== undefined) log(restoredFromLine(prepared, restoreFrom));
      // Epochs only grow: a restart goes one above the previous attempt, the first attempt above what storage records.
      fencing = issueFencingToken(fencing, fencing === undefined ? await highestRecordedEpoch(prepared.storage, prepared.external?.metadata) : -1);
      await prepared.storage.fence(fencing);
      const restored =
        restoreFrom === undefined ? undefined : await loadRestoredJob(restoreReader(prepared, restoreFrom), restoreFrom, plan, allVertices);
      let tasks: DeployedTask[] = [];
      const driver: CheckpointDriver = new EmbeddedCheckpointDriver({
        fencing,
        options: config,
        storage: prepared.storage,
        tasks: allTasks(plan),
        sourceTasks: sourceTasks(plan),
        maxParallelism: plan.maxParallelism,
        lastCheckpointId: Math.max(lastCheckpointId, restoreFrom?.checkpointId ?? 0),
        retainedCheckpointIds: await retainedCheckpointIds(prepared.storage),
        operators: operatorStateRecords(plan),
        dispatch: {
          trigger: (barrier) => tasks.forEach((t) => t.triggerCheckpoint(barrier)),
          notifyComplete: (id, final) => hub.notifyComplete(id, final),
        },
        log,
      });
      const hub = new CheckpointHub(prepared.storage, driver, fencing);
      hub.onComplete((id) => tasks.forEach((t) => t.notifyCheckpointComplete(id)));
      tasks = deploy(restored, hub, fencing);
      // Failing checkpoint storage fails the attempt: every task ends with its error.
      void driver.failed.catch((err: unknown) => tasks.forEach((t) => t.cancel(err)));
      try {
        await runTasks(tasks);
        return summarize(started, tasks.map((t) => t.metrics));
      } finally {
        // A failed attempt's checkpoints still being written would race the next attempt's clean-up of them.
        await hub.idle();
        await driver.stop();
        lastCheckpointId = driver.lastCheckpointId;
      }
    },
  });
}
