import type { TaskId } from './types.ts';

export function sameTask(a: TaskId, b: TaskId): boolean {
  return a.vertex === b.vertex && a.subtask === b.subtask;
}

/** Vertex first, then subtask: the order tasks are listed in metadata. */
export function compareTaskIds(a: TaskId, b: TaskId): number {
  return a.vertex - b.vertex || a.subtask - b.subtask;
}

export function describeTask(task: TaskId): string {
  return `vertex ${task.vertex} subtask ${task.subtask}`;
}
