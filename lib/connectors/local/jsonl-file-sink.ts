import { mkdirSync } from 'node:fs';
import { ConfigError } from '../../core/index.ts';
import { finiteJson } from '../finite-json.ts';
import type { Committer, SinkContext, TwoPhaseCommitSink } from '../sink.ts';
import { JsonlFileCommitter } from './jsonl-file-committer.ts';
import { JsonlFileWriter } from './jsonl-file-writer.ts';
import type { PartFileCommittable } from './part-file.ts';
import { checkOutputDirectory } from './output-file-checks.ts';
import { cleanUpInProgressLeftovers } from './part-file-cleanup.ts';
import { attemptTag, writerAttempt } from './part-file-names.ts';

export interface JsonlFileSinkOptions<T> {
  /** Output directory; created if missing. */
  readonly dir: string;
  /** A part file is finished and a new one started once it holds at least this many bytes. @default 128 MiB */
  readonly rollSizeBytes?: number;
  /** Bytes (approximately: characters) buffered before a write to the file. @default 64 KiB */
  readonly bufferSizeBytes?: number;
  /**
   * Turns a record into its line (without the newline). @default JSON.stringify, except that a NaN or ±Infinity
   * anywhere in the record fails the job (NonFiniteNumberError naming the field) instead of being written as null
   */
  readonly format?: (value: T) => string;
  /** File name prefix: files are `<prefix>-<subtask>-<n>.jsonl`. @default 'part' */
  readonly prefix?: string;
  /** Sink name in the plan. @default `jsonl:<dir>` */
  readonly name?: string;
}

export type JsonlFileSink<T> = TwoPhaseCommitSink<T, PartFileCommittable>;

const DEFAULT_ROLL_SIZE = 128 * 1024 * 1024;
const DEFAULT_BUFFER_SIZE = 64 * 1024;

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new ConfigError(`JSONL file sink: ${name} must be a positive integer, got ${value}`);
  return value;
}

/**
 * Writes JSONL part files into `dir`, exactly once when the job checkpoints. Readers only ever see complete files
 * named `<prefix>-<subtask>-<n>.jsonl`. A file is written as `.<prefix>-<subtask>-<n>.jsonl.<attempt>.inprogress`,
 * renamed to `...<attempt>.pending` when pre-committed (closed, fsynced) and to its final name when committed.
 * `n` continues past every part of the subtask in `dir`, final or hidden, of any run, so no final name is reused
 * (neither a committed file's nor that of a pending committable a checkpoint may still commit). One sink (one
 * prefix) per directory. No empty files are created.
 *
 * What the runtime calls, with checkpoints (`SinkContext.checkpointing` not false):
 * - at start, per subtask: `commit` of the restored committables dealt to it and `cleanUpDangling(ctx, them)`
 *   (in either order), before it acknowledges any checkpoint;
 * - `prepareCommit(id)` at each barrier: the files rolled over since the last one and the current one, all pending;
 * - `commit` of them once checkpoint `id` is complete; at the end of input a final checkpoint. `finish` renames
 *   nothing; `close` leaves the in-progress file to the cleanup of a later attempt.
 * Without checkpoints (`checkpointing: false`): a roll-over commits the finished file at once; at the end of input
 * `prepareCommit` then `commit`, or `finish` alone, makes the last file visible.
 * Leftovers of earlier attempts: `cleanUpDangling` deletes their in-progress files; their pending files, which may
 * belong to another subtask's share of the restored checkpoint, are deleted by the first commit of a file of the
 * current attempt (a checkpoint of this attempt is then complete, so every restored committable is committed).
 */
export function jsonlFileSink<T>(options: JsonlFileSinkOptions<T>): JsonlFileSink<T> {
  if (typeof options.dir !== 'string' || options.dir.length === 0) throw new ConfigError('JSONL file sink: `dir` is required');
  const prefix = options.prefix ?? 'part';
  if (!/^[A-Za-z0-9_-]+$/.test(prefix)) throw new ConfigError(`JSONL file sink: prefix "${prefix}" must match [A-Za-z0-9_-]+`);
  const dir = options.dir;
  const config = {
    dir,
    prefix,
    rollSize: positiveInteger('rollSizeBytes', options.rollSizeBytes, DEFAULT_ROLL_SIZE),
    bufferSize: positiveInteger('bufferSizeBytes', options.bufferSizeBytes, DEFAULT_BUFFER_SIZE),
  };
  return {
    name: options.name ?? `jsonl:${dir}`,
    twoPhaseCommit: true,
    createWriter(ctx: SinkContext): JsonlFileWriter<T> {
      checkOutputDirectory(dir, 'JSONL file sink: output directory');
      try {
        mkdirSync(dir, { recursive: true });
      } catch (err) {
        throw new ConfigError(`JSONL file sink: cannot create output directory "${dir}"`, { cause: err });
      }
      const operator = ctx.operatorName;
      const format = options.format ?? ((value: T) => finiteJson(value, operator));
      return new JsonlFileWriter({ ...config, format }, ctx.subtask, writerAttempt(ctx.fencing), ctx.checkpointing !== false);
    },
    createCommitter(ctx: SinkContext): Committer<PartFileCommittable> {
      return new JsonlFileCommitter(dir, prefix, attemptTag(ctx.fencing));
    },
    // `keep` is not needed: what it lists is pending, and only in-progress files are deleted here.
    async cleanUpDangling(ctx: SinkContext): Promise<void> {
      // Without the run's attempt, files of this run's other writers would look like leftovers.
      const attempt = attemptTag(ctx.fencing);
      if (attempt === undefined) throw new ConfigError('JSONL file sink: cleanUpDangling needs SinkContext.fencing');
      await cleanUpInProgressLeftovers(dir, prefix, attempt);
    },
  };
}
