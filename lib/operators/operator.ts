import type { Clock, FencingToken, KeyGroupRange, RecordBatch } from '../core/index.ts';
import type { KeyedStateBackend } from '../state/index.ts';
import type { Output } from './output.ts';
import type { InternalTimerService } from '../state/timers/timer-service.ts';

/** What the runtime gives an operator subtask when it opens. */
export interface OperatorContext {
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  /** Key groups this subtask owns (the whole range for non-keyed operators). */
  readonly keyGroupRange: KeyGroupRange;
  readonly clock: Clock;
  /** Present for operators after keyBy. */
  readonly keyedState: KeyedStateBackend | undefined;
  /** Present for operators after keyBy. */
  readonly timers: InternalTimerService | undefined;
  /** Checkpoints are taken: two-phase-commit sinks commit on checkpoint completion, not at the end of input. */
  readonly checkpointing: boolean;
  /**
   * Who this attempt is: a new token (higher epoch) at every start and restart. Sinks name their temporary files
   * and transactions with `fencingTag(fencing)` and refuse to commit for an older epoch than one already seen.
   */
  readonly fencing: FencingToken;
  /**
   * Who commits a two-phase-commit sink's committables (SinkContext.commitMode): `coordinator` in a cluster slot,
   * where the sink operator only hands them over with the checkpoint. @default 'self'
   */
  readonly sinkCommitMode?: 'self' | 'coordinator';
  /** Latest watermark this operator has received. */
  currentWatermark(): number;
  /**
   * Asks the task to call `onProcessingTime` at (or soon after) `time`. Calls with a later time than an
   * already requested one do not delay the earlier wake-up.
   */
  requestProcessingTimeWakeup(time: number): void;
}

/**
 * The operator contract: one required method, every other hook defaulted by the task
 * (watermarks are forwarded, the rest does nothing). All hooks run on the task's thread, one at a time.
 *
 * Hooks may return a promise (sinks doing I/O); the task awaits it before taking the next input element.
 * Emitting is synchronous, so a chained operator's promise is collected by the task rather than by its upstream.
 */
export interface Operator<IN, OUT> {
  readonly name: string;
  /**
   * Records dropped so far because they were late and had nowhere to go (no late-data side output): the task
   * reports them in its metrics, the job summary and a warning. Absent: the operator drops nothing.
   */
  readonly droppedLateRecords?: number;
  open?(ctx: OperatorContext, output: Output<OUT>): void | Promise<void>;
  /** `input` is 0, or 1 for the second input of a two-input operator. */
  processBatch(batch: RecordBatch<IN>, input: number): void | Promise<void>;
  /** Called with the combined (min over inputs) watermark when it advances. Default: forward it. */
  processWatermark?(timestamp: number): void | Promise<void>;
  /** Processing time reached a requested wake-up. */
  onProcessingTime?(time: number): void | Promise<void>;
  /**
   * The synchronous phase of a checkpoint: this operator's non-keyed state as plain-data items (keyed state and
   * timers are snapshotted by the runtime). When the parallelism changes, items are dealt round-robin to the new
   * subtasks. Processing resumes as soon as this returns, so copy rather than write files here.
   */
  snapshotState?(checkpointId: number): unknown[] | Promise<unknown[]>;
  /** Before `open`: the restored items assigned to this subtask (empty when starting without a checkpoint). */
  initializeState?(items: readonly unknown[]): void | Promise<void>;
  /** Checkpoint `checkpointId` is complete (its metadata is committed): make its side effects visible. */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  /** All inputs ended (after the final watermark). Emit what is left. */
  endInput?(): void | Promise<void>;
  /** Release resources; called on success and on failure. */
  close?(): void | Promise<void>;
}

/** Operators with two inputs receive batches with `input` 0 or 1; the type of input 1 is carried here. */
export type TwoInputOperator<IN1, IN2, OUT> = Operator<IN1 | IN2, OUT>;
