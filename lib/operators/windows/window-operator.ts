import {
  ConfigError,
  MIN_WATERMARK,
  SluiceError,
  UserFunctionError,
  isValidKey,
  originAt,
  type Key,
  type OutputTag,
  type RecordBatch,
} from '../../core/index.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { prefetchBatchKeys, prefetchTimerKeys } from '../joins/prefetch.ts';
import type { InternalTimerService, Timer } from '../timer-service.ts';
import { LateRecords } from './late-records.ts';
import { SessionWindowLogic } from './session-window-logic.ts';
import { SlicedWindowLogic } from './sliced-window-logic.ts';
import type { WindowAssigner } from './window-assigner.ts';
import { createWindowContents, type FiringEnv, type WindowFunctionSpec } from './window-contents.ts';
import { WindowEmitter } from './window-emitter.ts';
import type { WindowLogic } from './window-logic.ts';
import { WindowTimers } from './window-timers.ts';

export type { WindowFunctionSpec } from './window-contents.ts';

export interface WindowOperatorSpec<IN, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector: (value: IN) => K;
  readonly assigner: WindowAssigner;
  /** Event time only: how long after a window's end it still accepts (and re-fires for) late elements. */
  readonly allowedLatenessMs: number;
  /** Late elements go here with their original timestamps; without a tag they are dropped and counted. */
  readonly lateDataTag?: OutputTag<IN> | undefined;
  readonly fn: WindowFunctionSpec<IN, K, OUT>;
}

export interface WindowOperator<IN, OUT> extends Operator<IN, OUT> {
  /** Late elements dropped because no late-data tag was set. */
  readonly droppedLateRecords: number;
}

/**
 * A keyed window operator with the semantics of Flink's WindowOperator and its default triggers
 * (EventTimeTrigger / ProcessingTimeTrigger):
 * - an element joins each of its windows that is not late (maxTimestamp + allowedLateness > watermark); one that
 *   joins none and is itself late goes to the late-data side output, or is dropped and counted;
 * - event-time windows fire when the watermark reaches end - 1, and again for every element added after that
 *   while they are within allowed lateness; their state is purged at end - 1 + allowedLateness;
 * - processing-time windows fire when the clock reaches end - 1, and all remaining ones fire at end of input;
 * - results carry the timestamp end - 1 and leave as one batch per input batch, watermark or wake-up.
 * Contents live in keyed state and timers in the timer service, so both are snapshotted per key group.
 *
 * Order caveat: sliding windows are computed from slices and sessions from merged state, so a reduce function
 * sees values, and a process function sees elements, grouped by slice or merged session rather than strictly
 * in arrival order. Reduce and aggregate-merge functions must be associative and commutative for results to be
 * independent of that, and (as for all state) must not mutate their inputs.
 */
export function createWindowOperator<IN, K extends Key, OUT>(
  spec: WindowOperatorSpec<IN, K, OUT>,
): WindowOperator<IN, OUT> {
  validateSpec(spec);
  return new KeyedWindowOperator(spec);
}

function validateSpec<IN, K extends Key, OUT>(spec: WindowOperatorSpec<IN, K, OUT>): void {
  const where = `window operator "${spec.name}"`;
  const lateness = spec.allowedLatenessMs;
  if (!Number.isSafeInteger(lateness) || lateness < 0) {
    throw new ConfigError(
      `${where}: allowed lateness must be a whole number of milliseconds >= 0, got ${String(lateness)}`,
    );
  }
  if (!spec.assigner.isEventTime && lateness > 0) {
    throw new ConfigError(
      `${where}: allowed lateness (${lateness} ms) applies only to event-time windows, and ${String(spec.assigner)} ` +
        'uses processing time; remove the allowed lateness or use an event-time window assigner',
    );
  }
  if (typeof spec.keySelector !== 'function') {
    throw new ConfigError(`${where}: keySelector must be a function returning the key of a record`);
  }
}

class KeyedWindowOperator<IN, K extends Key, OUT> implements WindowOperator<IN, OUT>, FiringEnv<OUT> {
  readonly name: string;
  readonly emitter = new WindowEmitter<OUT>();
  private readonly lateRecords = new LateRecords<IN>();
  private readonly isEventTime: boolean;
  private readonly lateness: number;
  private dropped = 0;
  private watermark = MIN_WATERMARK;

  private ctx!: OperatorContext;
  private output!: Output<OUT>;
  private backend!: KeyedStateBackend;
  private timerService!: InternalTimerService;
  private windowTimers!: WindowTimers;
  private logic!: WindowLogic<K>;

  constructor(private readonly spec: WindowOperatorSpec<IN, K, OUT>) {
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
      throw new ConfigError(
        `window operator "${this.name}" has no keyed state or timers: key the stream (keyBy) before windowing it`,
      );
    }
    this.ctx = ctx;
    this.output = output;
    this.backend = backend;
    this.timerService = timers;
    this.watermark = ctx.currentWatermark();
    this.windowTimers = new WindowTimers(timers, this.isEventTime, (time) => ctx.requestProcessingTimeWakeup(time));
    const contents = createWindowContents<IN, K, OUT>(this.spec.fn, backend, this);
    const assigner = this.spec.assigner;
    const params = { isEventTime: assigner.isEventTime, allowedLatenessMs: this.lateness };
    switch (assigner.kind) {
      case 'session':
        this.logic = new SessionWindowLogic<K>({ ...params, gapMs: assigner.gapMs }, backend, contents, this.windowTimers);
        break;
      case 'tumbling':
        this.logic = new SlicedWindowLogic<K>(
          { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.sizeMs, offsetMs: assigner.offsetMs },
          contents,
          this.windowTimers,
        );
        break;
      case 'sliding':
        this.logic = new SlicedWindowLogic<K>(
          { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.slideMs, offsetMs: assigner.offsetMs },
          contents,
          this.windowTimers,
        );
        break;
    }
    // Timers restored from a checkpoint need their wake-up.
    this.windowTimers.requestNextWakeup();
  }

  currentWatermark(): number {
    return this.watermark;
  }

  currentProcessingTime(): number {
    return this.ctx.clock.now();
  }

  /** Reads the batch's keys ahead first when the backend keeps state off the heap (KeyedStateBackend.prefetch). */
  processBatch(batch: RecordBatch<IN>): void | Promise<void> {
    const pending = prefetchBatchKeys(this.backend, batch.values, this.spec.keySelector);
    if (pending === undefined) this.processElements(batch);
    else return pending.then(() => this.processElements(batch));
  }

  private processElements(batch: RecordBatch<IN>): void {
    const values = batch.values;
    const timestamps = batch.timestamps;
    const n = values.length;
    const keySelector = this.spec.keySelector;
    const backend = this.backend;
    const logic = this.logic;
    const isEventTime = this.isEventTime;
    const watermark = this.watermark;
    // One clock reading per batch: the batch is processed at one instant.
    const now = isEventTime ? 0 : this.ctx.clock.now();
    let i = 0;
    try {
      for (; i < n; i++) {
        const value = values[i] as IN;
        const key = keySelector(value);
        if (!isValidKey(key)) throw invalidKey(key);
        let time = now;
        if (isEventTime) {
          time = timestamps[i] as number;
          if (!Number.isFinite(time)) throw this.missingTimestamp(time);
        }
        backend.setCurrentKey(key);
        if (!logic.processElement(value, time, key, watermark) && isEventTime && time + this.lateness <= watermark) {
          this.onLateRecord(batch, i);
        }
      }
    } catch (err) {
      this.emitter.discard();
      this.lateRecords.discard();
      throw err instanceof SluiceError ? err : new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, i), err);
    }
    this.flush();
  }

  processWatermark(timestamp: number): void | Promise<void> {
    let pending: void | Promise<void> = undefined;
    if (timestamp > this.watermark) {
      this.watermark = timestamp;
      if (this.isEventTime) pending = this.fireDueTimers(timestamp);
    }
    const finish = (): void => {
      this.flush();
      this.output.emitWatermark(timestamp);
    };
    if (pending === undefined) finish();
    else return pending.then(finish);
  }

  onProcessingTime(time: number): void | Promise<void> {
    if (this.isEventTime) return;
    const finish = (): void => {
      this.windowTimers.requestNextWakeup();
      this.flush();
    };
    const pending = this.fireDueTimers(time);
    if (pending === undefined) finish();
    else return pending.then(finish);
  }

  /** The job is ending: processing-time windows fire now; event-time ones fired at the final watermark. */
  endInput(): void | Promise<void> {
    if (this.isEventTime) return;
    const pending = this.fireDueTimers(Number.POSITIVE_INFINITY);
    if (pending === undefined) this.flush();
    else return pending.then(() => this.flush());
  }

  /** Fires due timers round by round; a round whose keys must be read first continues once they are. */
  private fireDueTimers(limit: number): void | Promise<void> {
    const timers = this.timerService;
    for (;;) {
      const due = this.isEventTime ? timers.popEventTimeTimers(limit) : timers.popProcessingTimeTimers(limit);
      if (due.length === 0) return;
      const pending = prefetchTimerKeys(this.backend, due);
      if (pending !== undefined) {
        return pending.then(() => {
          this.fireTimers(due);
          return this.fireDueTimers(limit);
        });
      }
      this.fireTimers(due);
    }
  }

  private fireTimers(due: readonly Timer[]): void {
    const backend = this.backend;
    const logic = this.logic;
    try {
      for (const timer of due) {
        backend.setCurrentKey(timer.key);
        logic.onTimer(timer);
      }
    } catch (err) {
      this.emitter.discard();
      throw err instanceof SluiceError ? err : new UserFunctionError(this.name, this.ctx.subtask, undefined, err);
    }
    // Emit round by round: a watermark that closes millions of windows must not hold all their results.
    this.emitter.flush(this.output);
  }

  private onLateRecord(batch: RecordBatch<IN>, index: number): void {
    if (this.spec.lateDataTag === undefined) this.dropped++;
    else this.lateRecords.add(batch, index);
  }

  private flush(): void {
    this.emitter.flush(this.output);
    const tag = this.spec.lateDataTag;
    if (tag !== undefined) this.lateRecords.flush(this.output, tag);
  }

  private missingTimestamp(time: number): ConfigError {
    return new ConfigError(
      `window operator "${this.name}" uses event time, but a record has no valid timestamp (${time}); assign ` +
        'timestamps and watermarks (a WatermarkStrategy) before the window, or use a processing-time window',
    );
  }
}

function invalidKey(key: unknown): TypeError {
  return new TypeError(`key selector returned ${String(key)} (${typeof key}); keys must be strings or finite numbers`);
}
