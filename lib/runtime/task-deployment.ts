import type { PhysicalPlan } from '../graph/physical-plan.ts';
import type { SourceSplit } from '../connectors/source.ts';
import { StaticSplitEnumerator, type SplitEnumerator } from '../connectors/split-enumerator.ts';
import type { Placement, WorkerId } from './placement.ts';
import { wireTask } from './channel-wiring.ts';
import { createTask, type DeployedTask, type TaskSetup } from './deployed-task.ts';

export type { DeployedTask, TaskSetup } from './deployed-task.ts';

/** One worker's deployment: the plan, where its tasks run, and what they share. */
export interface DeploymentSetup extends TaskSetup {
  readonly plan: PhysicalPlan;
  /** The worker being deployed: only the tasks `placement` puts on it are built. */
  readonly worker: WorkerId;
  /** Where every task of the plan runs (the same on every worker). */
  readonly placement: Placement;
}

/** The split enumerator of the embedded runners: every source's splits (listed once, by vertex id) dealt statically. */
export function staticSplitEnumerator(plan: PhysicalPlan, splits: ReadonlyMap<number, readonly SourceSplit[]>): SplitEnumerator {
  return new StaticSplitEnumerator(
    plan.vertices.flatMap((v) =>
      v.source === undefined ? [] : [{ vertex: v.id, source: v.source.source, parallelism: v.parallelism, splits: splits.get(v.id) ?? [] }],
    ),
  );
}

/** The vertices with at least one task on `worker` (the only ones whose restored state it loads). */
export function verticesOn(plan: PhysicalPlan, placement: Placement, worker: WorkerId): Set<number> {
  return new Set(
    plan.vertices
      .filter((v) => Array.from({ length: v.parallelism }, (_, subtask) => placement({ vertex: v.id, subtask })).includes(worker))
      .map((v) => v.id),
  );
}

/** Builds the tasks that `placement` puts on this worker, each over the channel ends the factory makes for it. */
export function deployTasks(setup: DeploymentSetup): DeployedTask[] {
  const { plan, placement, worker } = setup;
  const tasks: DeployedTask[] = [];
  for (const vertex of plan.vertices) {
    for (let subtask = 0; subtask < vertex.parallelism; subtask++) {
      if (placement({ vertex: vertex.id, subtask }) !== worker) continue;
      tasks.push(createTask(setup, plan, vertex, subtask, wireTask(plan, vertex, subtask, placement, setup.channels)));
    }
  }
  return tasks;
}
