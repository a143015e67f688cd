/** Counters of one task, reported when the job ends. */
export interface TaskMetrics {
  readonly vertex: string;
  readonly subtask: number;
  recordsIn: number;
  recordsOut: number;
}
