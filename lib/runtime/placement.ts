import { ConfigError, InternalError } from '../core/index.ts';
import type { TaskId } from '../checkpoint/types.ts';
import type { PhysicalPlan } from '../graph/physical-plan.ts';

/**
 * Names one worker: a thread of `sluice run` today, a worker process later. Tasks on the same worker share its
 * event loop and talk over in-memory queues; tasks on different workers need a channel that crosses between them.
 */
export type WorkerId = number;

/** Where each task runs. Must give the same answer for the same task everywhere it is asked (every worker asks). */
export type Placement = (task: TaskId) => WorkerId;

/**
 * A placement written out per task (vertex id -> worker of each subtask), so it can be sent to a worker that
 * cannot receive a function (a worker thread, a process); `placementOf` turns it back into a Placement.
 */
export type PlacementTable = readonly (readonly WorkerId[])[];

/**
 * Subtask s of every vertex on worker s % workers. Subtasks with the same index share a worker, so forward edges
 * (the common chain-breaking case) stay inside it; with `workers` = the highest parallelism every subtask index
 * has a worker of its own, which is what `sluice run` did before workers could be shared.
 */
export function roundRobinPlacement(workers: number): Placement {
  if (!Number.isInteger(workers) || workers < 1) throw new ConfigError(`a placement needs at least one worker, got ${workers}`);
  return (task) => task.subtask % workers;
}

/** Writes `placement` out for every task of `plan`. */
export function placementTable(plan: PhysicalPlan, placement: Placement): PlacementTable {
  return plan.vertices.map((v) => Array.from({ length: v.parallelism }, (_, subtask) => placement({ vertex: v.id, subtask })));
}

/** The placement a table describes; a task the table does not list is an internal error (plans differ). */
export function placementOf(table: PlacementTable): Placement {
  return (task) => {
    const worker = table[task.vertex]?.[task.subtask];
    if (worker === undefined) throw new InternalError(`the placement lists no worker for subtask ${task.subtask} of vertex ${task.vertex}`);
    return worker;
  };
}

/** The highest parallelism of the plan's vertices: more workers than this would have nothing to run. */
export function highestParallelism(plan: PhysicalPlan): number {
  return Math.max(1, ...plan.vertices.map((v) => v.parallelism));
}

/**
 * How many worker threads run a plan: `requested` clamped to the highest parallelism (a thread without a task is
 * waste), or by default one per processor up to that parallelism, so a high parallelism shares a few threads
 * instead of starting one thread (and one copy of the job and its heap) per subtask.
 */
export function workerThreadCount(plan: PhysicalPlan, processors: number, requested?: number): number {
  if (requested !== undefined && (!Number.isInteger(requested) || requested < 1)) {
    throw new ConfigError(`the number of worker threads must be an integer of at least 1, got ${requested}`);
  }
  return Math.min(highestParallelism(plan), requested ?? Math.max(1, processors));
}
