import {
  InternalError,
  InvalidKeyError,
  isValidKey,
  MAX_WATERMARK,
  NO_TIMESTAMP,
  originAt,
  SluiceError,
  type Key,
  type RecordBatch,
} from '../../core/index.ts';
import type { Collector, KeyedRuntimeContext, OnTimerContext } from '../../contracts/functions.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { afterwards, fireTimerRounds } from '../read-ahead.ts';
import type { InternalTimerService, Timer } from '../../state/timers/timer-service.ts';
import {
  BufferingCollector,
  KeyedElementContext,
  keyedRuntimeContext,
  ProcessingTimeAwareTimers,
  userFunctionError,
} from './process-contexts.ts';

/** The lifecycle and timer hooks common to KeyedProcessFunction and KeyedCoProcessFunction. */
export interface KeyedTimerFunction<K extends Key, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/**
 * Under the final watermark a function that re-registers an event-time timer from onTimer (a periodic timer)
 * would fire forever; after this many rounds the operator fails with an explanation instead of hanging.
 */
const MAX_FINAL_WATERMARK_ROUNDS = 100_000;

/**
 * Shared machinery of the keyed process operators: open (runtime context with keyed state), firing event-time
 * timers on watermarks and processing-time timers on wake-ups, and close.
 *
 * Semantics (as in Flink):
 * - Output of processElement carries the input record's timestamp; output of an event-time onTimer carries the
 *   timer's timestamp; output of a processing-time onTimer carries no timestamp (NO_TIMESTAMP), because a
 *   wall-clock time is not an event time.
 * - Event-time timers registered while timers fire, at or below the watermark, fire in the same watermark.
 * - Processing-time timers still pending at the end of input are not fired; the final watermark fires all
 *   event-time timers before endInput.
 */
export abstract class KeyedProcessBase<K extends Key, IN, OUT> implements Operator<IN, OUT> {
  protected ctx!: OperatorContext;
  protected output!: Output<OUT>;
  protected state!: KeyedStateBackend;
  protected timers!: InternalTimerService;
  protected readonly collector = new BufferingCollector<OUT>();
  protected element!: KeyedElementContext<K>;
  private processingTimers!: ProcessingTimeAwareTimers;

  constructor(
    readonly name: string,
    private readonly timerFunction: KeyedTimerFunction<K, OUT>,
  ) {}

  open(ctx: OperatorContext, output: Output<OUT>): void {
    if (ctx.keyedState === undefined || ctx.timers === undefined) {
      throw new InternalError(`keyed operator "${this.name}" was opened without keyed state and timers (not after keyBy?)`);
    }
    this.ctx = ctx;
    this.output = output;
    this.state = ctx.keyedState;
    this.timers = ctx.timers;
    this.processingTimers = new ProcessingTimeAwareTimers(ctx.timers, ctx);
    this.element = new KeyedElementContext<K>(ctx.clock, this.collector as BufferingCollector<unknown>, this.processingTimers);
    this.element.watermark = ctx.currentWatermark();
    try {
      this.timerFunction.open?.(keyedRuntimeContext(ctx, ctx.keyedState));
    } catch (err) {
      throw userFunctionError(ctx, this.name, undefined, err);
    }
    // Restored processing-time timers need a wake-up too.
    this.processingTimers.scheduleNext(Number.NEGATIVE_INFINITY);
  }

  abstract processBatch(batch: RecordBatch<IN>, input: number): void | Promise<void>;

  processWatermark(timestamp: number): void | Promise<void> {
    this.element.watermark = timestamp;
    let rounds = 0;
    const pop = (): Timer[] => {
      const due = this.timers.popEventTimeTimers(timestamp);
      if (due.length > 0 && timestamp === MAX_WATERMARK && ++rounds > MAX_FINAL_WATERMARK_ROUNDS) {
        this.collector.discard();
        throw userFunctionError(
          this.ctx,
          this.name,
          undefined,
          new SluiceError(
            'RUNAWAY_TIMERS',
            'event-time timers kept being registered from onTimer under the final watermark (end of input); ' +
              'stop re-registering periodic timers when ctx.timerService.currentWatermark() is +Infinity',
          ),
        );
      }
      return due;
    };
    return afterwards(fireTimerRounds(this.state, pop, (due) => this.fire(due, 'event')), () => {
      this.collector.flush(this.output);
      this.output.emitWatermark(timestamp);
    });
  }

  onProcessingTime(time: number): void | Promise<void> {
    const pop = (): Timer[] => this.timers.popProcessingTimeTimers(time);
    return afterwards(fireTimerRounds(this.state, pop, (due) => this.fire(due, 'processing')), () => {
      this.collector.flush(this.output);
      this.processingTimers.scheduleNext(time);
    });
  }

  close(): void {
    if (this.ctx === undefined) return;
    try {
      this.timerFunction.close?.();
    } catch (err) {
      throw userFunctionError(this.ctx, this.name, undefined, err);
    }
  }

  /** Sets the current key for state and the context; a selector's throw or invalid key is the user's error. */
  protected selectKey<V>(selector: (value: V) => K, value: V, batch: RecordBatch<unknown>, index: number): K {
    let key: K;
    try {
      key = selector(value);
    } catch (err) {
      this.collector.discard();
      throw userFunctionError(this.ctx, this.name, originAt(batch, index), err);
    }
    if (!isValidKey(key)) {
      this.collector.discard();
      throw userFunctionError(
        this.ctx,
        this.name,
        originAt(batch, index),
        new InvalidKeyError(key),
      );
    }
    this.state.setCurrentKey(key);
    this.element.currentKey = key;
    return key;
  }

  protected failOnRecord(batch: RecordBatch<unknown>, index: number, err: unknown): Error {
    this.collector.discard();
    return userFunctionError(this.ctx, this.name, originAt(batch, index), err);
  }

  private fire(due: readonly Timer[], domain: 'event' | 'processing'): void {
    const onTimer = this.timerFunction.onTimer;
    if (onTimer === undefined) return;
    const element = this.element;
    const collector = this.collector;
    element.timeDomain = domain;
    for (let i = 0; i < due.length; i++) {
      const timer = due[i] as Timer;
      this.state.setCurrentKey(timer.key);
      element.currentKey = timer.key as K;
      element.timestamp = timer.timestamp;
      collector.timestamp = domain === 'event' ? timer.timestamp : NO_TIMESTAMP;
      try {
        onTimer.call(this.timerFunction, timer.timestamp, element, collector);
      } catch (err) {
        collector.discard();
        throw userFunctionError(this.ctx, this.name, undefined, err);
      }
    }
    // Emit round by round: a watermark that fires millions of timers must not hold all their output.
    collector.flush(this.output);
  }
}
