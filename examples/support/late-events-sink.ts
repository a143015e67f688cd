import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConfigError, type RecordBatch, type Sink, type SinkContext, type SinkWriter } from 'sluice';

export interface LateEventsSinkOptions {
  /** Job name, at the start of the report line. */
  readonly jobName: string;
  /** JSONL file that receives the late records; undefined: they are counted and reported only. */
  readonly path: string | undefined;
  /** Says how to keep late records when `path` is undefined (e.g. which flag to pass). */
  readonly keepHint: string;
}

const FLUSH_CHARS = 64 * 1024;

/**
 * Receives a window's late records. Writes them as JSON lines to `path` (through a hidden in-progress file in the
 * same directory, renamed when the input ends, so a finished file is always complete), or only counts them.
 * Either way it reports the count on stderr when the input ends, so late data is never lost silently.
 * Run it with parallelism 1: one file, one report line.
 */
export function lateEventsSink<T>(options: LateEventsSinkOptions): Sink<T> {
  return {
    name: options.path === undefined ? 'late events (count only)' : `late events -> ${options.path}`,
    createWriter(ctx: SinkContext): SinkWriter<T> {
      if (ctx.parallelism !== 1) {
        throw new ConfigError(`${ctx.operatorName}: the late-events sink writes one file; give it parallelism 1, got ${ctx.parallelism}`);
      }
      return new LateEventsWriter<T>(options);
    },
  };
}

class LateEventsWriter<T> implements SinkWriter<T> {
  private count = 0;
  private fd: number | undefined;
  private buffered = '';
  private readonly inProgressPath: string | undefined;

  constructor(private readonly options: LateEventsSinkOptions) {
    const path = options.path;
    if (path === undefined) return;
    this.inProgressPath = join(dirname(path), `.${basename(path)}.inprogress`);
    try {
      mkdirSync(dirname(path), { recursive: true });
      this.fd = openSync(this.inProgressPath, 'w');
    } catch (err) {
      throw new ConfigError(`cannot write late events to ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  write(batch: RecordBatch<T>): void {
    this.count += batch.values.length;
    if (this.fd === undefined) return;
    for (const value of batch.values) this.buffered += JSON.stringify(value) + '\n';
    if (this.buffered.length >= FLUSH_CHARS) this.flush();
  }

  finish(): void {
    const { path, jobName, keepHint } = this.options;
    if (this.fd !== undefined && path !== undefined) {
      this.flush();
      closeSync(this.fd);
      this.fd = undefined;
      renameSync(this.inProgressPath as string, path);
      report(`${jobName}: ${this.count} late event(s) written to ${path}`);
    } else if (this.count > 0) {
      report(`${jobName}: ${this.count} late event(s) dropped; ${keepHint}`);
    }
  }

  close(): void {
    // After a failure the in-progress file stays (hidden) for inspection, like the part files.
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private flush(): void {
    if (this.buffered.length > 0) writeSync(this.fd as number, this.buffered);
    this.buffered = '';
  }
}

/** Written synchronously to fd 2: a worker thread's process.stderr is forwarded asynchronously and may be cut off when the thread ends. */
function report(line: string): void {
  writeSync(2, `${line}\n`);
}
