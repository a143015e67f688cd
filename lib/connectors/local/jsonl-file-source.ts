import { ConfigError, NO_TIMESTAMP } from '../../core/index.ts';
import type { PollResult, Source, SourceReader, SourceReaderContext, SplitEnumeratorContext } from '../source.ts';
import { DeadLetterFile, checkDeadLetterTarget } from './dead-letter-file.ts';
import { listInputFiles, planFollowSplits, planRangeSplits } from './jsonl-file-split.ts';
import type { JsonlFileSplit } from './jsonl-file-split.ts';
import { JsonlSplitReader } from './jsonl-split-reader.ts';
import type { JsonlSourceCounters } from './jsonl-split-reader.ts';

export interface JsonlFollowOptions {
  /** How long the reader waits before looking at the file again when it has read everything. @default 200 */
  readonly pollIntervalMs?: number;
  /** End the file's split once it has not grown for this long. @default undefined (follow forever) */
  readonly idleTimeoutMs?: number;
}

export interface JsonlFileSourceOptions<T> {
  /** A JSONL file, or a directory whose `*.jsonl` files (hidden names excepted) are all read, sorted by name. */
  readonly path: string;
  /**
   * File that receives malformed lines (invalid JSON, `parse` threw, or the WatermarkStrategy given with the source
   * assigned an invalid event timestamp) as JSON lines
   * `{"file", "line", "offset", "error", "raw"}`; the job goes on. Several subtasks may share it.
   * @default undefined: malformed lines are counted and logged to stderr once per split, with the count.
   * The path may not be the input, lie inside an input directory, or be a directory; an existing file is refused
   * unless it is the dead-letter file of this same input (then a rerun, e.g. after a crash, adds each letter once).
   */
  readonly deadLetterPath?: string;
  /** How the user sets `deadLetterPath`, for messages (e.g. the job's flag `--dead-letter`). @default 'deadLetterPath' */
  readonly deadLetterLabel?: string;
  /**
   * Validates or transforms each parsed line; throwing rejects the line to the dead letters.
   * @default the JSON.parse result as is
   */
  readonly parse?: (value: unknown) => T;
  /**
   * Follow a growing file (tail -f): keep reading appended lines. Each file is one split. A last line without
   * a newline is held back until its newline arrives or the idle timeout ends the split.
   * @default undefined (read the files as they are and end)
   */
  readonly follow?: JsonlFollowOptions;
  /** Target size of a byte-range split (bounded mode); a file gets at least `parallelism` splits. @default 64 MiB */
  readonly splitSizeBytes?: number;
  /** Size of one read; lines longer than this still work (the buffer grows). @default 1 MiB */
  readonly readChunkBytes?: number;
  /** Source name in the plan and in errors. @default `jsonl:<path>` */
  readonly name?: string;
}

const DEFAULT_SPLIT_SIZE = 64 * 1024 * 1024;
const DEFAULT_READ_CHUNK = 1024 * 1024;
const DEFAULT_POLL_INTERVAL_MS = 200;

interface CompiledOptions<T> {
  readonly path: string;
  readonly deadLetterPath: string | undefined;
  readonly deadLetterLabel: string;
  readonly parse: ((value: unknown) => T) | undefined;
  readonly follow: { readonly pollIntervalMs: number; readonly idleTimeoutMs: number | undefined } | undefined;
  readonly splitSizeBytes: number;
  readonly readChunkBytes: number;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`JSONL source: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function compile<T>(options: JsonlFileSourceOptions<T>): CompiledOptions<T> {
  if (typeof options.path !== 'string' || options.path.length === 0) {
    throw new ConfigError('JSONL source: `path` (a file or a directory) is required');
  }
  let follow: CompiledOptions<T>['follow'];
  if (options.follow !== undefined) {
    const pollIntervalMs = positiveInteger('follow.pollIntervalMs', options.follow.pollIntervalMs, DEFAULT_POLL_INTERVAL_MS);
    const idle = options.follow.idleTimeoutMs;
    if (idle !== undefined && !(Number.isFinite(idle) && idle >= 0)) {
      throw new ConfigError(`JSONL source: follow.idleTimeoutMs must be a non-negative number, got ${idle}`);
    }
    follow = { pollIntervalMs, idleTimeoutMs: idle };
  }
  const deadLetterLabel = options.deadLetterLabel ?? 'deadLetterPath';
  // Checked when the job is built, so a wrong path stops it before it starts.
  if (options.deadLetterPath !== undefined) checkDeadLetterTarget(options.deadLetterPath, deadLetterLabel, options.path);
  return {
    path: options.path,
    deadLetterPath: options.deadLetterPath,
    deadLetterLabel,
    parse: options.parse,
    follow,
    splitSizeBytes: positiveInteger('splitSizeBytes', options.splitSizeBytes, DEFAULT_SPLIT_SIZE),
    readChunkBytes: positiveInteger('readChunkBytes', options.readChunkBytes, DEFAULT_READ_CHUNK),
  };
}

/** A JSONL source reader; `counters` cover all its splits. */
export interface JsonlFileReader<T> extends SourceReader<T, JsonlFileSplit> {
  readonly counters: Readonly<JsonlSourceCounters>;
  /**
   * Sends the record that starts at byte `offset` of split `split`, from the batch the last `poll` returned, to the
   * dead-letter file with `reason`, as for a malformed line: for records rejected after the read (an invalid
   * timestamp, say). False when there is no dead-letter file: the caller must then fail, naming the record's origin.
   */
  rejectRecord(split: string, offset: number, reason: string): boolean;
}

/** The JSONL source, with its reader type spelled out (handy when driving readers directly). */
export interface JsonlFileSource<T> extends Source<T, JsonlFileSplit> {
  createSplits(ctx: SplitEnumeratorContext): Promise<JsonlFileSplit[]>;
  createReader(splits: JsonlFileSplit[], ctx: SourceReaderContext): JsonlFileReader<T>;
}

/**
 * Reads JSON Lines files. Bounded mode cuts files into byte-range splits; follow mode tails each file. Batch
 * offsets are byte offsets of line starts in the file; timestamps are NO_TIMESTAMP (assign them with a
 * WatermarkStrategy). Blank lines are skipped. A missing input is a ConfigError naming the path.
 * Bounded unless `follow` is set without an idle timeout.
 */
export function jsonlFileSource<T = unknown>(options: JsonlFileSourceOptions<T>): JsonlFileSource<T> {
  const opts = compile(options);
  return {
    name: options.name ?? `jsonl:${opts.path}`,
    bounded: opts.follow === undefined || opts.follow.idleTimeoutMs !== undefined,
    // Range splits of a time-ordered file start far apart in event time: aligned, the later ones wait instead of
    // piling up windows until the earlier ones catch up.
    alignsWatermarks: true,
    ...(opts.follow === undefined ? {} : { maxParallelism: 1 }),
    async createSplits(ctx: SplitEnumeratorContext): Promise<JsonlFileSplit[]> {
      const files = await listInputFiles(opts.path);
      return opts.follow === undefined
        ? planRangeSplits(files, ctx.parallelism, opts.splitSizeBytes)
        : planFollowSplits(files);
    },
    createReader(splits: JsonlFileSplit[], ctx: SourceReaderContext): JsonlFileReader<T> {
      return new JsonlReader(splits, ctx, opts);
    },
  };
}

class JsonlReader<T> implements JsonlFileReader<T> {
  readonly counters: JsonlSourceCounters = { recordsRead: 0, deadLetters: 0, bytesRead: 0 };
  private readonly pending: JsonlFileSplit[];
  private readonly active: JsonlSplitReader<T>[] = [];
  private readonly deadLetters: DeadLetterFile | undefined;
  /** Follow mode rotates among files so that one busy file does not starve the others. */
  private cursor = 0;
  /** The split reader of the last batch: it can find that batch's lines again (rejectRecord). */
  private lastBatchReader: JsonlSplitReader<T> | undefined;
  /** Splits paused by watermark alignment. */
  private readonly paused = new Set<string>();
  /** Open splits whose last read found no complete line (follow mode): they have no data available now. */
  private readonly starved = new Set<string>();

  constructor(
    splits: JsonlFileSplit[],
    private readonly ctx: SourceReaderContext,
    private readonly opts: CompiledOptions<T>,
  ) {
    this.pending = [...splits];
    this.deadLetters =
      opts.deadLetterPath === undefined ? undefined : new DeadLetterFile(opts.deadLetterPath, { label: opts.deadLetterLabel, input: opts.path });
    // Follow mode reads all files side by side; bounded mode opens one split at a time.
    if (opts.follow !== undefined) while (this.pending.length > 0) this.openNext();
  }

  poll(maxRecords: number): PollResult<T> {
    const max = Math.max(1, maxRecords);
    for (;;) {
      if (this.active.length === 0 && this.pending.length > 0) this.openNext();
      if (this.active.length === 0) return { kind: 'end' };
      let starved = 0;
      while (starved < this.active.length) {
        if (this.cursor >= this.active.length) this.cursor = 0;
        const reader = this.active[this.cursor] as JsonlSplitReader<T>;
        if (this.paused.has(reader.split.id)) {
          // Not read: bounded mode opens no other split meanwhile (it reads its splits one after the other).
          this.cursor++;
          starved++;
          continue;
        }
        const values: T[] = [];
        const offsets: number[] = [];
        const status = reader.read(max, values, offsets);
        if (status === 'done') {
          this.active.splice(this.cursor, 1);
          if (this.active.length === 0 && this.pending.length > 0) this.openNext();
        } else if (status === 'starved' || this.opts.follow !== undefined) {
          this.cursor++;
        }
        if (status === 'starved') {
          starved++;
          this.starved.add(reader.split.id);
        } else {
          this.starved.delete(reader.split.id);
        }
        if (values.length > 0) {
          this.starved.delete(reader.split.id);
          const timestamps = new Array<number>(values.length).fill(NO_TIMESTAMP);
          this.lastBatchReader = reader;
          return { kind: 'batch', batch: { values, timestamps, split: reader.split.id, offsets } };
        }
        if (this.active.length === 0) break;
      }
      // No caughtUpSplits: watermark alignment must not wait for a split it cannot make progress, and bounded mode
      // opens the next split only when the open one ends, so a split not opened yet is not waited for either
      // (waiting for it while the open one is paused would never end). caughtUp() below is the stricter answer
      // that idleness needs.
      if (this.active.length > 0) return { kind: 'wait', retryAfterMs: this.opts.follow?.pollIntervalMs ?? 0 };
    }
  }

  /** The line goes to the dead-letter file like a malformed one, with `reason` as its error. */
  rejectRecord(split: string, offset: number, reason: string): boolean {
    const reader = this.lastBatchReader;
    return reader !== undefined && reader.split.id === split && reader.rejectRecord(offset, reason);
  }

  /**
   * Only a followed file at its end has no data available. A split not opened yet (bounded mode reads one at a time,
   * and after a restore a subtask may hold another's unfinished split) or paused by alignment has data waiting: it
   * must never be taken for idle, or the watermark would pass its records.
   */
  caughtUp(splitId: string): boolean {
    if (this.starved.has(splitId)) return true;
    return !this.pending.some((s) => s.id === splitId) && !this.active.some((r) => r.split.id === splitId);
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
  }

  currentSplits(checkpointId?: number): JsonlFileSplit[] {
    // The letters of the lines before these positions must outlive a crash once the checkpoint completes.
    if (checkpointId !== undefined) this.deadLetters?.sync();
    return [...this.active.map((r) => r.position()), ...this.pending];
  }

  close(): void {
    for (const reader of this.active) reader.close();
    this.active.length = 0;
    this.deadLetters?.close();
  }

  private openNext(): void {
    const split = this.pending.shift() as JsonlFileSplit;
    this.active.push(
      new JsonlSplitReader<T>(split, {
        parse: this.opts.parse,
        readChunkBytes: this.opts.readChunkBytes,
        deadLetters: this.deadLetters,
        deadLetterLabel: this.opts.deadLetterLabel,
        counters: this.counters,
        clock: this.ctx.clock,
        idleTimeoutMs: this.opts.follow?.idleTimeoutMs,
      }),
    );
  }
}
