import { mkdirSync } from 'node:fs';
import { ConfigError } from '../../core/index.ts';
import type { RecordBatch } from '../../core/index.ts';
import type { Sink, SinkContext, SinkWriter } from '../sink.ts';
import { PartFile, commitPartFile, nextPartNumber, partFileNames } from './part-file.ts';

export interface JsonlFileSinkOptions<T> {
  /** Output directory; created if missing. */
  readonly dir: string;
  /** A part file is finished and a new one started once it holds at least this many bytes. @default 128 MiB */
  readonly rollSizeBytes?: number;
  /** Bytes (approximately: characters) buffered before a write to the file. @default 64 KiB */
  readonly bufferSizeBytes?: number;
  /** Turns a record into its line (without the newline). @default JSON.stringify */
  readonly format?: (value: T) => string;
  /** File name prefix: files are `<prefix>-<subtask>-<n>.jsonl`. @default 'part' */
  readonly prefix?: string;
  /** Sink name in the plan. @default `jsonl:<dir>` */
  readonly name?: string;
}

const DEFAULT_ROLL_SIZE = 128 * 1024 * 1024;
const DEFAULT_BUFFER_SIZE = 64 * 1024;

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new ConfigError(`JSONL file sink: ${name} must be a positive integer, got ${value}`);
  return value;
}

/**
 * Writes JSONL part files into `dir`. Each subtask writes `.<prefix>-<subtask>-<n>.jsonl.inprogress` and renames
 * it to `<prefix>-<subtask>-<n>.jsonl` when it rolls over or the input ends; numbering continues past the files of
 * earlier runs. After a failure the in-progress file is left in place. No empty files are created.
 */
export function jsonlFileSink<T>(options: JsonlFileSinkOptions<T>): Sink<T> {
  if (typeof options.dir !== 'string' || options.dir.length === 0) throw new ConfigError('JSONL file sink: `dir` is required');
  const prefix = options.prefix ?? 'part';
  if (!/^[A-Za-z0-9_-]+$/.test(prefix)) throw new ConfigError(`JSONL file sink: prefix "${prefix}" must match [A-Za-z0-9_-]+`);
  const rollSize = positiveInteger('rollSizeBytes', options.rollSizeBytes, DEFAULT_ROLL_SIZE);
  const bufferSize = positiveInteger('bufferSizeBytes', options.bufferSizeBytes, DEFAULT_BUFFER_SIZE);
  const format = options.format ?? ((value: T) => JSON.stringify(value));
  const dir = options.dir;
  return {
    name: options.name ?? `jsonl:${dir}`,
    createWriter(ctx: SinkContext): SinkWriter<T> {
      try {
        mkdirSync(dir, { recursive: true });
      } catch (err) {
        throw new ConfigError(`JSONL file sink: cannot create output directory "${dir}"`, { cause: err });
      }
      return new JsonlFileWriter(dir, prefix, ctx.subtask, rollSize, bufferSize, format);
    },
  };
}

class JsonlFileWriter<T> implements SinkWriter<T> {
  private current: PartFile | undefined;
  private nextPart: number;

  constructor(
    private readonly dir: string,
    private readonly prefix: string,
    private readonly subtask: number,
    private readonly rollSize: number,
    private readonly bufferSize: number,
    private readonly format: (value: T) => string,
  ) {
    this.nextPart = nextPartNumber(dir, prefix, subtask);
  }

  write(batch: RecordBatch<T>): void {
    const values = batch.values;
    for (let i = 0; i < values.length; i++) {
      const file = this.current ?? this.open();
      file.append(this.format(values[i] as T) + '\n');
      if (file.reached(this.rollSize)) this.commitCurrent();
    }
  }

  finish(): void {
    if (this.current !== undefined) this.commitCurrent();
  }

  close(): void {
    this.current?.abandon();
    this.current = undefined;
  }

  private open(): PartFile {
    const { finalPath, inProgressPath } = partFileNames(this.dir, this.prefix, this.subtask, this.nextPart++);
    this.current = PartFile.create(finalPath, inProgressPath, this.bufferSize);
    return this.current;
  }

  private commitCurrent(): void {
    const file = this.current as PartFile;
    this.current = undefined;
    commitPartFile(file.closeForCommit());
    file.markCommitted();
  }
}
