import type { MessagePort } from 'node:worker_threads';
import type { JobOptions } from '../../api/job-options.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import type { TaskMetrics } from '../task-metrics.ts';
import type { SerializedError } from './remote-error.ts';

/** What the coordinating thread gives each worker thread. */
export interface WorkerInit {
  readonly modulePath: string;
  readonly flags: Record<string, unknown>;
  readonly jobOptions: JobOptions;
  readonly thread: number;
  /** Identifies this run of the job, the same in every thread. */
  readonly attempt: string;
  readonly fingerprint: string;
  readonly splits: [number, SourceSplit[]][];
  readonly ports: Record<string, MessagePort>;
}

export type WorkerReport =
  | { readonly type: 'done'; readonly metrics: TaskMetrics[] }
  | { readonly type: 'failed'; readonly error: SerializedError };
