import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import type { RecordBatch } from '../../core/index.ts';
import type { Committer, SinkContext, TwoPhaseCommitSink, TwoPhaseCommitSinkWriter } from '../sink.ts';
import { assertAppendCommittable, checkAppendTarget, commitAppend, segmentPath, type AppendCommittable, type AppendOwnerRecord } from './append-file-commit.ts';
import { checkOutputFile } from './output-file-checks.ts';
import { readOwnerRecord } from './output-owner.ts';
import { attemptTag, writerAttempt } from './part-file-names.ts';

export interface JsonlAppendSinkOptions<T> {
  /** The JSONL file that receives the records; its directory is created if missing. */
  readonly path: string;
  /** How the user named the path, for messages (e.g. the job's flag `--late-output`). @default 'path' */
  readonly label?: string;
  /** The job's inputs (files or directories): the file may not be one of them nor lie inside one. @default [] */
  readonly inputs?: readonly string[];
  /** Turns a record into its line (without the newline). @default JSON.stringify */
  readonly format?: (value: T) => string;
  /** Sink name in the plan. @default `jsonl-append:<path>` */
  readonly name?: string;
}

export type JsonlAppendSink<T> = TwoPhaseCommitSink<T, AppendCommittable>;

const FLUSH_CHARS = 64 * 1024;

/**
 * Writes records as JSON lines to one file, exactly once when the job checkpoints: the file grows by whole
 * checkpoints. Records since the last checkpoint go to a hidden segment file beside it
 * (`.<name>.<attempt>-<n>.inprogress`, `.pending` once pre-committed at the barrier); when the checkpoint is complete
 * the segment is appended to the file (see `commitAppend`: idempotent, journaled in the owner record
 * `.<name>.sluice.json`). After a crash, a rerun with the same checkpoints appends what the restored checkpoint
 * holds and replays the rest, so every record is in the file once. Without checkpoints the whole output is one
 * segment, appended at the end of input.
 *
 * The file is never destroyed: an existing one is refused (ConfigError) unless it is this job's own output and the
 * job continues from its checkpoints. A path that is a directory or one of `inputs` is refused when the sink is
 * created. Parallelism 1 (one file).
 */
export function jsonlAppendSink<T>(options: JsonlAppendSinkOptions<T>): JsonlAppendSink<T> {
  if (typeof options.path !== 'string' || options.path.length === 0) throw new ConfigError('JSONL append sink: `path` is required');
  const label = options.label ?? 'path';
  checkOutputFile({ path: options.path, label, inputs: options.inputs ?? [] });
  // Absolute: committables in checkpoints name it, and a rerun from another working directory must find it.
  const target = resolve(options.path);
  // A file without an owner record is nobody's output: refuse it now, before the job starts. Whether this run
  // continues the owner's checkpoints is known only when the sink opens (`checkAppendTarget`).
  if (existsSync(target) && readOwnerRecord<Partial<AppendOwnerRecord>>(target)?.kind !== 'appended') checkAppendTarget(target, label, undefined);
  const format = options.format ?? ((value: T) => JSON.stringify(value));
  /** The owner of the file this run continues; set by the committer's first commit (of the restored committables). */
  let owner: string | undefined;
  return {
    name: options.name ?? `jsonl-append:${target}`,
    twoPhaseCommit: true,
    createWriter(ctx: SinkContext): AppendWriter<T> {
      if (ctx.parallelism !== 1) throw new ConfigError(`${ctx.operatorName}: ${label} is one file; give its sink parallelism 1, got ${ctx.parallelism}`);
      const attempt = writerAttempt(ctx.fencing);
      // The owner names the job that writes the file, not an attempt: unique, unlike a token's epoch across jobs.
      owner ??= randomUUID();
      try {
        mkdirSync(dirname(target), { recursive: true });
      } catch (err) {
        throw new ConfigError(`${label} ${target}: cannot create its directory: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      return new AppendWriter<T>(target, owner, attempt, format);
    },
    createCommitter(): Committer<AppendCommittable> {
      let first = true;
      return {
        commit(committables: readonly AppendCommittable[]): void {
          const elsewhere = committables.find((c) => typeof c === 'object' && c !== null && c.target !== target);
          if (elsewhere !== undefined) {
            throw new ConfigError(
              `${label}: the restored checkpoint writes to ${String(elsewhere.target)}, this run to ${target}; give the same file to continue the job (or start it afresh)`,
            );
          }
          for (const c of committables) assertAppendCommittable(c, target);
          if (first) {
            // The runtime commits the restored checkpoint's committables first (none for a fresh start).
            first = false;
            owner = committables[0]?.owner;
            checkAppendTarget(target, label, owner);
          }
          for (const c of committables) commitAppend(c);
        },
      };
    },
    cleanUpDangling(ctx: SinkContext): void {
      const attempt = attemptTag(ctx.fencing);
      if (attempt === undefined) throw new ConfigError('JSONL append sink: cleanUpDangling needs SinkContext.fencing');
      // One writer (parallelism 1) and the restored segments are committed: any other attempt's segment is garbage.
      deleteOtherSegments(target, attempt);
    },
  };
}

function deleteOtherSegments(target: string, attempt: string): void {
  const prefix = `.${basename(target)}.`;
  let names: string[];
  try {
    names = readdirSync(dirname(target));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || !/\.[A-Za-z0-9_-]+-\d+\.(inprogress|pending)$/.test(name)) continue;
    if (name.startsWith(`${prefix}${attempt}-`)) continue;
    try {
      unlinkSync(join(dirname(target), name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

class AppendWriter<T> implements TwoPhaseCommitSinkWriter<T, AppendCommittable> {
  private fd: number | undefined;
  private buffered = '';
  private bytes = 0;
  private next = 0;

  constructor(
    private readonly target: string,
    private readonly owner: string,
    private readonly attempt: string,
    private readonly format: (value: T) => string,
  ) {}

  write(batch: RecordBatch<T>): void {
    for (const value of batch.values) this.buffered += this.format(value) + '\n';
    if (this.buffered.length >= FLUSH_CHARS) this.flush();
  }

  prepareCommit(): AppendCommittable[] {
    this.flush();
    if (this.fd === undefined) return [{ target: this.target, owner: this.owner, segment: null, size: 0 }];
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = undefined;
    const n = this.next++;
    const pending = segmentPath(this.target, this.attempt, n, 'pending');
    renameSync(segmentPath(this.target, this.attempt, n, 'inprogress'), pending);
    const size = this.bytes;
    this.bytes = 0;
    return [{ target: this.target, owner: this.owner, segment: pending, size }];
  }

  close(): void {
    // An in-progress segment stays for the cleanup of a later attempt; its records are replayed.
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private flush(): void {
    if (this.buffered.length === 0) return;
    if (this.fd === undefined) this.fd = openSync(segmentPath(this.target, this.attempt, this.next, 'inprogress'), 'wx', 0o600);
    const data = Buffer.from(this.buffered, 'utf8');
    this.buffered = '';
    let written = 0;
    while (written < data.length) written += writeSync(this.fd, data, written);
    this.bytes += data.length;
  }
}
