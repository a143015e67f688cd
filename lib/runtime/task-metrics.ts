/** Counters of one task, reported when the job ends. */
export interface TaskMetrics {
  readonly vertex: string;
  readonly subtask: number;
  /** The task runs a source: its records out are records read. */
  readonly source: boolean;
  recordsIn: number;
  recordsOut: number;
  /** Late records the task's operators dropped (no late-data side output); see Operator.droppedLateRecords. */
  droppedLateRecords: number;
}
