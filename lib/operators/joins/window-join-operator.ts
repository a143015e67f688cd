import {
  ConfigError,
  isValidKey,
  MIN_WATERMARK,
  originAt,
  SluiceError,
  UserFunctionError,
  type Key,
  type OutputTag,
  type RecordBatch,
} from '../../core/index.ts';
import type { ProcessWindowJoinFunction } from '../../api/join-functions.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import type { InternalTimerService, Timer } from '../timer-service.ts';
import { LateRecords } from '../windows/late-records.ts';
import { SessionWindowLogic } from '../windows/session-window-logic.ts';
import { SlicedWindowLogic } from '../windows/sliced-window-logic.ts';
import type { WindowAssigner } from '../windows/window-assigner.ts';
import type { FiringEnv, WindowContents } from '../windows/window-contents.ts';
import { WindowEmitter } from '../windows/window-emitter.ts';
import type { WindowLogic } from '../windows/window-logic.ts';
import { WindowTimers } from '../windows/window-timers.ts';
import { prefetchBatchKeys, prefetchTimerKeys } from './prefetch.ts';
import { WindowJoinContents } from './window-join-contents.ts';

export interface WindowJoinSpec<IN1, IN2, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector1: (value: IN1) => K;
  readonly keySelector2: (value: IN2) => K;
  readonly assigner: WindowAssigner;
  /** Event time only: how long after a window's end it still accepts (and re-fires for) late records. */
  readonly allowedLatenessMs: number;
  /** Records too late for all their windows go here; without a tag they are dropped and counted. */
  readonly leftLateDataTag?: OutputTag<IN1> | undefined;
  readonly rightLateDataTag?: OutputTag<IN2> | undefined;
  readonly fn: ProcessWindowJoinFunction<IN1, IN2, OUT, K>;
}

export interface WindowJoinOperator<IN1, IN2, OUT> extends Operator<IN1 | IN2, OUT> {
  /** Late records dropped because their input had no late-data tag. */
  readonly droppedLateRecords: number;
}

/**
 * Flink's window join (JoinedStreams ... window(assigner).apply): the records of both inputs with the same key
 * and in the same window are joined when the window fires. It is the window operator with two inputs: the same
 * window logic (tumbling and sliding windows by slicing, merging sessions, processing time, allowed lateness with
 * re-firing and purging) keeps both inputs' records side by side in one namespace, and a fired window in which
 * both inputs have records is passed to the join function. Sessions merge across both inputs, as in Flink, where
 * the two inputs are one tagged union. Results carry the timestamp end - 1. A window that re-fires for a late
 * record emits its whole join again (as Flink does).
 */
export function createWindowJoinOperator<IN1, IN2, K extends Key, OUT>(
  spec: WindowJoinSpec<IN1, IN2, K, OUT>,
): WindowJoinOperator<IN1, IN2, OUT> {
  validateWindowJoinSpec(spec.name, spec.assigner, spec.allowedLatenessMs);
  return new KeyedWindowJoinOperator(spec);
}

export function validateWindowJoinSpec(name: string, assigner: WindowAssigner, lateness: number): void {
  if (!Number.isSafeInteger(lateness) || lateness < 0) {
    throw new ConfigError(
      `window join "${name}": allowed lateness must be a whole number of milliseconds >= 0, got ${String(lateness)}`,
    );
  }
  if (!assigner.isEventTime && lateness > 0) {
    throw new ConfigError(
      `window join "${name}": allowed lateness (${lateness} ms) applies only to event-time windows, and ` +
        `${String(assigner)} uses processing time; remove the allowed lateness or use an event-time assigner`,
    );
  }
}

class KeyedWindowJoinOperator<IN1, IN2, K extends Key, OUT> implements WindowJoinOperator<IN1, IN2, OUT>, FiringEnv<OUT> {
  readonly name: string;
  readonly emitter = new WindowEmitter<OUT>();
  private readonly leftLate = new LateRecords<IN1>();
  private readonly rightLate = new LateRecords<IN2>();
  private readonly isEventTime: boolean;
  private readonly lateness: number;
  private dropped = 0;
  private watermark = MIN_WATERMARK;

  private ctx!: OperatorContext;
  private output!: Output<OUT>;
  private backend!: KeyedStateBackend;
  private timerService!: InternalTimerService;
  private windowTimers!: WindowTimers;
  private contents!: WindowJoinContents<IN1, IN2, K, OUT>;
  private logic!: WindowLogic<K>;

  constructor(private readonly spec: WindowJoinSpec<IN1, IN2, K, OUT>) {
    this.name = spec.name;
    this.isEventTime = spec.assigner.isEventTime;
    this.lateness = spec.assigner.isEventTime ? spec.allowedLatenessMs : 0;
  }

  get droppedLateRecords(): number {
    return this.dropped;
  }

  open(ctx: OperatorContext, output: Output<OUT>): void {
    const backend = ctx.keyedState;
    const timers = ctx.timers;
    if (backend === undefined || timers === undefined) {
      throw new ConfigError(`window join "${this.name}" has no keyed state or timers: key both inputs before joining them`);
    }
    this.ctx = ctx;
    this.output = output;
    this.backend = backend;
    this.timerService = timers;
    this.watermark = ctx.currentWatermark();
    this.windowTimers = new WindowTimers(timers, this.isEventTime, (time) => ctx.requestProcessingTimeWakeup(time));
    this.contents = new WindowJoinContents<IN1, IN2, K, OUT>(backend, this.spec.fn, this);
    this.logic = createLogic<K>(this.spec.assigner, this.lateness, backend, this.contents, this.windowTimers);
    // Timers restored from a checkpoint need their wake-up.
    this.windowTimers.requestNextWakeup();
  }

  currentWatermark(): number {
    return this.watermark;
  }

  currentProcessingTime(): number {
    return this.ctx.clock.now();
  }

  /** Reads ahead the batch's keys (KeyedStateBackend.prefetch); synchronous unless the backend has to read. */
  processBatch(batch: RecordBatch<IN1 | IN2>, input: number): void | Promise<void> {
    const pending =
      input === 0
        ? prefetchBatchKeys(this.backend, batch.values as IN1[], this.spec.keySelector1)
        : prefetchBatchKeys(this.backend, batch.values as IN2[], this.spec.keySelector2);
    if (pending === undefined) this.processNow(batch, input);
    else return pending.then(() => this.processNow(batch, input));
  }

  private processNow(batch: RecordBatch<IN1 | IN2>, input: number): void {
    if (input === 0) this.processInput(batch as RecordBatch<IN1>, 0, this.spec.keySelector1, this.leftLate);
    else this.processInput(batch as RecordBatch<IN2>, 1, this.spec.keySelector2, this.rightLate);
    this.flush();
  }

  private processInput<V>(batch: RecordBatch<V>, input: number, keySelector: (value: V) => K, late: LateRecords<V>): void {
    const { values, timestamps } = batch;
    const n = values.length;
    const { backend, logic, isEventTime, watermark, lateness } = this;
    const hasLateTag = (input === 0 ? this.spec.leftLateDataTag : this.spec.rightLateDataTag) !== undefined;
    this.contents.input = input;
    // One clock reading per batch: the batch is processed at one instant.
    const now = isEventTime ? 0 : this.ctx.clock.now();
    let i = 0;
    try {
      for (; i < n; i++) {
        const value = values[i] as V;
        const key = keySelector(value);
        if (!isValidKey(key)) {
          throw new TypeError(`the key selector returned ${String(key)} (${typeof key}); keys must be strings or finite numbers`);
        }
        let time = now;
        if (isEventTime) {
          time = timestamps[i] as number;
          if (!Number.isFinite(time)) throw this.missingTimestamp(time);
        }
        backend.setCurrentKey(key);
        if (!logic.processElement(value, time, key, watermark) && isEventTime && time + lateness <= watermark) {
          if (hasLateTag) late.add(batch, i);
          else this.dropped++;
        }
      }
    } catch (err) {
      this.discard();
      throw err instanceof SluiceError ? err : new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, i), err);
    }
  }

  processWatermark(timestamp: number): void | Promise<void> {
    if (timestamp > this.watermark) {
      this.watermark = timestamp;
      if (this.isEventTime) return this.then(this.fireDueTimers(timestamp), () => this.forwardWatermark(timestamp));
    }
    this.forwardWatermark(timestamp);
  }

  onProcessingTime(time: number): void | Promise<void> {
    if (this.isEventTime) return undefined;
    return this.then(this.fireDueTimers(time), () => {
      this.windowTimers.requestNextWakeup();
      this.flush();
    });
  }

  /** The job is ending: processing-time windows fire now; event-time ones fired at the final watermark. */
  endInput(): void | Promise<void> {
    if (this.isEventTime) return undefined;
    return this.then(this.fireDueTimers(Number.POSITIVE_INFINITY), () => this.flush());
  }

  private forwardWatermark(timestamp: number): void {
    this.flush();
    this.output.emitWatermark(timestamp);
  }

  /** Runs `next` after `pending`, synchronously when there is nothing to wait for. */
  private then(pending: void | Promise<void>, next: () => void): void | Promise<void> {
    if (pending === undefined) next();
    else return pending.then(next);
  }

  /**
   * Fires the due timers round by round, reading ahead each round's keys; a promise only when a read-ahead had to
   * wait. Failures drop what the timers produced.
   */
  private fireDueTimers(limit: number): void | Promise<void> {
    const timers = this.timerService;
    for (;;) {
      const due = this.isEventTime ? timers.popEventTimeTimers(limit) : timers.popProcessingTimeTimers(limit);
      if (due.length === 0) return undefined;
      const pending = prefetchTimerKeys(this.backend, due);
      if (pending !== undefined) {
        return pending.then(
          () => {
            this.fire(due);
            return this.fireDueTimers(limit);
          },
          (err: unknown) => {
            throw this.timerFailure(err);
          },
        );
      }
      this.fire(due);
    }
  }

  private fire(due: readonly Timer[]): void {
    const backend = this.backend;
    const logic = this.logic;
    try {
      for (let i = 0; i < due.length; i++) {
        const timer = due[i] as Timer;
        backend.setCurrentKey(timer.key);
        logic.onTimer(timer);
      }
    } catch (err) {
      throw this.timerFailure(err);
    }
    // Emit round by round: a watermark that closes millions of windows must not hold all their results.
    this.emitter.flush(this.output);
  }

  private timerFailure(err: unknown): Error {
    this.discard();
    return err instanceof SluiceError ? err : new UserFunctionError(this.name, this.ctx.subtask, undefined, err);
  }

  private discard(): void {
    this.emitter.discard();
    this.leftLate.discard();
    this.rightLate.discard();
  }

  private flush(): void {
    this.emitter.flush(this.output);
    const { leftLateDataTag, rightLateDataTag } = this.spec;
    if (leftLateDataTag !== undefined) this.leftLate.flush(this.output, leftLateDataTag);
    if (rightLateDataTag !== undefined) this.rightLate.flush(this.output, rightLateDataTag);
  }

  private missingTimestamp(time: number): ConfigError {
    return new ConfigError(
      `window join "${this.name}" uses event time, but a record has no valid timestamp (${time}); assign ` +
        'timestamps and watermarks (a WatermarkStrategy) to both inputs before the join, or use a processing-time window',
    );
  }
}

/** The single-input window operator's logic for the assigner, over the join's two-input contents. */
function createLogic<K extends Key>(
  assigner: WindowAssigner,
  lateness: number,
  backend: KeyedStateBackend,
  contents: WindowContents<K>,
  timers: WindowTimers,
): WindowLogic<K> {
  const params = { isEventTime: assigner.isEventTime, allowedLatenessMs: lateness };
  switch (assigner.kind) {
    case 'session':
      return new SessionWindowLogic<K>({ ...params, gapMs: assigner.gapMs }, backend, contents, timers);
    case 'tumbling':
      return new SlicedWindowLogic<K>(
        { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.sizeMs, offsetMs: assigner.offsetMs },
        contents,
        timers,
      );
    case 'sliding':
      return new SlicedWindowLogic<K>(
        { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.slideMs, offsetMs: assigner.offsetMs },
        contents,
        timers,
      );
  }
}
