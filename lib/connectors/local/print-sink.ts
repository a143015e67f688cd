import type { RecordBatch } from '../../core/index.ts';
import { finiteJson } from '../finite-json.ts';
import type { Sink, SinkContext, SinkWriter } from '../sink.ts';

/** A stream to print to: process.stdout, a file stream, any Writable. */
export interface PrintStream {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

export interface PrintSinkOptions<T> {
  /** Where lines go: a stream, or a function called once per line (without the newline). @default process.stdout */
  readonly target?: PrintStream | ((line: string) => void);
  /**
   * Turns a record into its line. @default JSON.stringify (String for what it cannot write), except that a NaN or
   * ±Infinity inside an object or array fails the job (NonFiniteNumberError naming the field) instead of printing null
   */
  readonly format?: (value: T, timestamp: number) => string;
  /** Put in front of the subtask prefix, Flink style: `id:2> ...` (or `id> ...` at parallelism 1). */
  readonly identifier?: string;
  /** Sink name in the plan. @default 'print' */
  readonly name?: string;
}

/** A bare NaN or Infinity prints as itself (String), as it did; only JSON would turn it into null. */
function defaultFormat(operator: string): (value: unknown) => string {
  return (value) => (typeof value === 'number' ? String(value) : (finiteJson(value, operator) ?? String(value)));
}

/** Flink's print prefix: the 1-based subtask number when parallelism > 1, plus the identifier if any. */
export function printPrefix(identifier: string | undefined, subtask: number, parallelism: number): string {
  const task = parallelism > 1 ? String(subtask + 1) : '';
  if (identifier !== undefined && identifier.length > 0) return task === '' ? `${identifier}> ` : `${identifier}:${task}> `;
  return task === '' ? '' : `${task}> `;
}

/** Prints one line per record (Flink's `print()`). A stream gets one write per batch; a full stream applies backpressure. */
export function printSink<T>(options: PrintSinkOptions<T> = {}): Sink<T> {
  return {
    name: options.name ?? 'print',
    createWriter(ctx: SinkContext): SinkWriter<T> {
      const format = options.format ?? (defaultFormat(ctx.operatorName) as (value: T, timestamp: number) => string);
      const prefix = printPrefix(options.identifier, ctx.subtask, ctx.parallelism);
      const target = options.target ?? (process.stdout as PrintStream);
      if (typeof target === 'function') {
        return {
          write(batch: RecordBatch<T>): void {
            const { values, timestamps } = batch;
            for (let i = 0; i < values.length; i++) target(prefix + format(values[i] as T, timestamps[i] as number));
          },
        };
      }
      return {
        write(batch: RecordBatch<T>): void | Promise<void> {
          const { values, timestamps } = batch;
          if (values.length === 0) return;
          let text = '';
          for (let i = 0; i < values.length; i++) text += prefix + format(values[i] as T, timestamps[i] as number) + '\n';
          if (target.write(text)) return;
          return new Promise<void>((resolve) => target.once('drain', resolve));
        },
      };
    },
  };
}
