import type { Clock, FencingToken, RecordBatch } from '../core/index.ts';

/**
 * A split is a plain-data description of a part of a source's input (a byte range of a file, a generator
 * partition, a shard). Splits are computed once, in the coordinating thread, and sent to the subtasks, so they
 * must survive structured cloning.
 */
export interface SourceSplit {
  /** Stable and unique within the source; it names the split in errors, dead letters and checkpoints. */
  readonly id: string;
}

export interface SplitEnumeratorContext {
  /** Parallelism of the source operator. */
  readonly parallelism: number;
}

export interface SourceReaderContext {
  readonly subtask: number;
  readonly parallelism: number;
  readonly clock: Clock;
  /** Stops a long wait (follow mode) when the job is cancelled. */
  readonly signal: AbortSignal;
  /**
   * The fencing token of this attempt of the job (a higher epoch on every restart); `fencingTag(fencing)` lets
   * readers of one attempt find each other. The runtime always sets it; readers created by hand (tests, baselines)
   * may leave it out.
   */
  readonly fencing?: FencingToken;
  /** Checkpointing is on: readers may wait for completed checkpoints (e.g. before reading a child shard). @default false */
  readonly checkpointing?: boolean;
  /**
   * Cluster slot with an aligned keyBy behind this source: read only the records whose partition key's
   * `kinesis-hash` key group (out of `maxParallelism`) lies in this inclusive range, from every shard that overlaps
   * it. Only sources with `supportsKeyGroupAlignment` are given it. @default undefined: read the assigned splits whole
   */
  readonly alignedKeyGroups?: { readonly start: number; readonly end: number; readonly maxParallelism: number };
}

/** What one poll returned. */
export type PollResult<T> =
  /** Records from one split. `offsets` (parallel to values) locate each record in the split. */
  | {
      readonly kind: 'batch';
      readonly batch: RecordBatch<T> & { readonly split: string };
      /** Splits that this poll read to their end (they stop holding back the watermark). */
      readonly finishedSplits?: readonly string[];
    }
  /** Nothing right now (unbounded source, rate limit); poll again after about `retryAfterMs`. */
  | {
      readonly kind: 'wait';
      readonly retryAfterMs: number;
      /**
       * Splits with no data to read now (a Kinesis shard at the tip, a shard waiting for its parents, a followed
       * file at its end): watermark alignment does not wait for them. @default every split not paused by alignment
       */
      readonly caughtUpSplits?: readonly string[];
    }
  /** Every assigned split is exhausted (bounded sources only). */
  | { readonly kind: 'end' };

/** Reads the splits assigned to one subtask. Called by one task, never concurrently. */
export interface SourceReader<T, S extends SourceSplit = SourceSplit> {
  /** At most about `maxRecords` records per batch; a batch holds records of one split only. */
  poll(maxRecords: number): Promise<PollResult<T>> | PollResult<T>;
  /**
   * Splits still being read, with positions advanced to what has been returned so far. Called at each checkpoint
   * barrier with the checkpoint's id (and without one outside checkpoints).
   */
  currentSplits(checkpointId?: number): S[];
  /**
   * Sends a record of the batch the last `poll` returned to the source's dead-letter output, with why it was
   * rejected (an invalid event timestamp). The task calls it before the next poll and before the next checkpoint
   * barrier, and leaves the record out of the stream. Returns false when the source has no dead-letter output (or
   * cannot find the record): the job then fails with an error naming the record. @default absent: false
   */
  rejectRecord?(split: string, offset: number, reason: string): boolean | Promise<boolean>;
  /**
   * Whether split `splitId` has no data available right now: everything that exists has been returned (Kinesis:
   * an empty read at the tip of the shard, MillisBehindLatest 0; a followed file: at its end). Only a caught-up
   * split can become idle (`WatermarkStrategy.withIdleness` counts its timeout only while the split is caught up);
   * a split whose reader is behind, has not had a first answer yet, or is retrying or throttled, holds the
   * watermark back however long that takes. Readers that fetch in the background must implement it.
   * @default absent: every split counts as caught up whenever `poll` returns 'wait' (the reader has nothing)
   */
  caughtUp?(splitId: string): boolean;
  /**
   * Watermark alignment: stop returning records of the `pause` splits until they are named in `resume` (split ids;
   * each call names only changes). While every split with data is paused, `poll` returns 'wait'. Readers without
   * it are paused as a whole, and only when their subtask's watermark runs ahead.
   */
  pauseOrResumeSplits?(pause: readonly string[], resume: readonly string[]): void;
  /** Checkpoint `checkpointId`, whose positions came from `currentSplits(checkpointId)`, is complete. */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  close(): Promise<void> | void;
}

export interface Source<T, S extends SourceSplit = SourceSplit> {
  readonly name: string;
  /** Bounded sources end; the job then fires all windows and exits. */
  readonly bounded: boolean;
  /**
   * Whether a reader reads its splits at the same time (Kinesis shards) rather than one after the other (file
   * ranges). Then every assigned split holds the watermark back from the start, until it has records, goes idle or
   * finishes; otherwise a split counts only once it produced a record. @default false
   */
  readonly concurrentSplits?: boolean;
  /**
   * Align the watermarks of this source's splits unless the watermark strategy says otherwise (see
   * WatermarkStrategy.withWatermarkAlignment), with DEFAULT_MAX_ALLOWED_DRIFT_MS. @default false
   */
  readonly alignsWatermarks?: boolean;
  /** Default parallelism when the job does not set one: for example 1 for a source that cannot be split. */
  readonly maxParallelism?: number;
  /**
   * The source can read exactly a key-group range of `kinesis-hash` key groups (`SourceReaderContext.alignedKeyGroups`),
   * as the Kinesis source does: a keyBy with `keyGroups: 'kinesis-hash'` right behind it needs no shuffle in a
   * cluster. @default false
   */
  readonly supportsKeyGroupAlignment?: boolean;
  createSplits(ctx: SplitEnumeratorContext): Promise<S[]> | S[];
  /**
   * Which subtask reads `split`, at start and when splits are redistributed on restore. Without it split i goes to
   * subtask i % parallelism. Sources that discover splits while running (Kinesis shards) need a fixed owner per split.
   */
  subtaskOf?(split: S, parallelism: number): number;
  /** `splits` are those assigned to this subtask (by `subtaskOf`, else split i goes to subtask i % parallelism). */
  createReader(splits: S[], ctx: SourceReaderContext): Promise<SourceReader<T, S>> | SourceReader<T, S>;
}
