import { writeSync } from 'node:fs';
import { ConfigError, jsonlAppendSink, type RecordBatch, type Sink, type SinkContext, type SinkWriter } from 'sluice';

export interface LateEventsSinkOptions {
  /** Job name, at the start of the report line. */
  readonly jobName: string;
  /** JSONL file that receives the late records; undefined: they are counted and reported only. */
  readonly path: string | undefined;
  /** How the user sets `path` (the job's flag), for messages. */
  readonly label: string;
  /** The job's inputs: `path` may not be one of them nor lie inside one. */
  readonly inputs: readonly string[];
  /** Says how to keep late records when `path` is undefined (e.g. which flag to pass). */
  readonly keepHint: string;
}

/**
 * Receives a window's late records. Writes them as JSON lines to `path` exactly once, committed with the job's
 * checkpoints (see `jsonlAppendSink`: the file grows by whole checkpoints, and an existing file that is not this
 * job's own output is refused), or only counts them. Either way it reports this run's count on stderr when the
 * input ends, so late data is never lost silently. Run it with parallelism 1: one file, one report line.
 */
export function lateEventsSink<T>(options: LateEventsSinkOptions): Sink<T> {
  const { path, jobName, keepHint } = options;
  if (path === undefined) {
    return {
      name: 'late events (count only)',
      createWriter(ctx: SinkContext): SinkWriter<T> {
        checkParallelism(ctx);
        let count = 0;
        return {
          write: (batch: RecordBatch<T>) => void (count += batch.values.length),
          finish: () => {
            if (count > 0) report(`${jobName}: ${count} late event(s) dropped; ${keepHint}`);
          },
        };
      },
    };
  }
  const file = jsonlAppendSink<T>({ path, label: options.label, inputs: options.inputs, name: `late events -> ${path}` });
  return {
    ...file,
    async createWriter(ctx: SinkContext) {
      checkParallelism(ctx);
      const writer = await file.createWriter(ctx);
      let count = 0;
      return {
        write(batch: RecordBatch<T>) {
          count += batch.values.length;
          return writer.write(batch);
        },
        prepareCommit: (checkpointId: number) => writer.prepareCommit(checkpointId),
        finish() {
          report(`${jobName}: ${count} late event(s) written to ${path}`);
          return writer.finish?.();
        },
        close: () => writer.close?.(),
      };
    },
  };
}

function checkParallelism(ctx: SinkContext): void {
  if (ctx.parallelism !== 1) {
    throw new ConfigError(`${ctx.operatorName}: the late-events sink writes one file; give it parallelism 1, got ${ctx.parallelism}`);
  }
}

/** Written synchronously to fd 2: a worker thread's process.stderr is forwarded asynchronously and may be cut off when the thread ends. */
function report(line: string): void {
  writeSync(2, `${line}\n`);
}
