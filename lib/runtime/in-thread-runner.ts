import { systemClock, type Clock } from '../core/index.ts';
import type { StreamEnvironment } from '../api/environment.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../graph/physical-plan.ts';
import type { SourceSplit } from '../connectors/source.ts';
import type { KeyedServices } from './operator-chain.ts';
import { deployTasks } from './task-deployment.ts';
import { memoryServices } from './default-services.ts';
import { runTasks } from './run-tasks.ts';
import { summarize, type JobResult } from './job-result.ts';

export interface InThreadRunOptions {
  /** Processing-time clock. @default the system clock */
  clock?: Clock;
  /** State backend and timers of keyed operators. @default in-memory */
  services?: KeyedServices;
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
 * queues. Parallelism, partitioning, watermarks and backpressure behave as with worker threads; only the cores
 * used differ. Jobs that capture in-memory data (collection sources, collect sinks) run this way.
 */
export async function runInThisThread(env: StreamEnvironment, options: InThreadRunOptions = {}): Promise<JobResult> {
  env.validate();
  const started = Date.now();
  const plan = buildPhysicalPlan(env.graph, env.options);
  const clock = options.clock ?? systemClock;
  const tasks = deployTasks({
    plan,
    options: env.options,
    splits: await computeSplits(plan),
    thread: 0,
    threadOf: () => 0,
    ports: new Map(),
    services: options.services ?? memoryServices(() => clock.now()),
    clock,
  });
  await runTasks(tasks);
  return summarize(started, tasks.map((t) => t.metrics));
}
