import type { RecordBatch } from '../core/index.ts';

export interface SinkContext {
  readonly subtask: number;
  readonly parallelism: number;
  /** Name of the sink operator, for file names and errors. */
  readonly operatorName: string;
}

/** Writes the records of one sink subtask. Called by one task, never concurrently. */
export interface SinkWriter<T> {
  /** May buffer; a returned promise makes the task wait before the next input (backpressure). */
  write(batch: RecordBatch<T>): void | Promise<void>;
  /** All input has ended: write out everything buffered and finish (rename, close files). */
  finish?(): void | Promise<void>;
  /** Release resources; called on success and on failure (after finish on success). */
  close?(): void | Promise<void>;
}

export interface Sink<T> {
  readonly name: string;
  createWriter(ctx: SinkContext): SinkWriter<T> | Promise<SinkWriter<T>>;
}
