import type { TaskMetrics } from './task-metrics.ts';

export interface JobResult {
  readonly durationMs: number;
  /** Records read by all sources. */
  readonly sourceRecords: number;
  /** Late records dropped by all tasks (no late-data side output). */
  readonly droppedLateRecords: number;
  readonly tasks: TaskMetrics[];
  /** Set when the job was stopped with a savepoint instead of running to its end: the savepoint's directory. */
  readonly stoppedWithSavepoint?: string;
}

export function summarize(startedAt: number, tasks: TaskMetrics[]): JobResult {
  let sourceRecords = 0;
  let droppedLateRecords = 0;
  for (const t of tasks) {
    if (t.source) sourceRecords += t.recordsOut;
    droppedLateRecords += t.droppedLateRecords;
  }
  return { durationMs: Date.now() - startedAt, sourceRecords, droppedLateRecords, tasks };
}
