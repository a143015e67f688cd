import type { RecordBatch } from '../../core/index.ts';
import type { Sink, SinkWriter } from '../sink.ts';

/**
 * Gathers every record into arrays the caller can read after the job. Only meaningful when the sink's subtasks
 * run in the caller's thread (in-thread jobs, tests): a worker thread would fill its own copy.
 * With parallelism > 1 the subtasks' records interleave in arrival order.
 */
export interface CollectSink<T> extends Sink<T> {
  readonly values: T[];
  /** Parallel to `values`. */
  readonly timestamps: number[];
  /** Writers that finished (their input ended); equals the parallelism once a bounded job is done. */
  readonly finishedWriters: number;
  /** Empties the arrays (and the finished count), to reuse the sink. */
  clear(): void;
}

export function collectSink<T>(name = 'collect'): CollectSink<T> {
  const values: T[] = [];
  const timestamps: number[] = [];
  let finished = 0;
  return {
    name,
    values,
    timestamps,
    get finishedWriters(): number {
      return finished;
    },
    clear(): void {
      values.length = 0;
      timestamps.length = 0;
      finished = 0;
    },
    createWriter(): SinkWriter<T> {
      return {
        write(batch: RecordBatch<T>): void {
          const n = batch.values.length;
          for (let i = 0; i < n; i++) {
            values.push(batch.values[i] as T);
            timestamps.push(batch.timestamps[i] as number);
          }
        },
        finish(): void {
          finished++;
        },
      };
    },
  };
}
