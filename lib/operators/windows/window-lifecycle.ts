import {
  ConfigError,
  MIN_WATERMARK,
  SluiceError,
  UserFunctionError,
  InvalidKeyError,
  isValidKey,
  originAt,
  type Key,
  type RecordBatch,
} from '../../core/index.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { afterwards, fireTimerRounds, withBatchKeys } from '../read-ahead.ts';
import type { InternalTimerService, Timer } from '../../state/timers/timer-service.ts';
import { createWindowLogic } from './create-window-logic.ts';
import type { FiringEnv } from './fired-window-context.ts';
import type { LateRecordRoute } from './late-record-route.ts';
import type { WindowAssigner } from './window-assigner.ts';
import type { WindowContents } from './window-contents.ts';
import { WindowEmitter } from './window-emitter.ts';
import type { WindowLogic } from './window-logic.ts';
import { WindowTimers } from './window-timers.ts';

export interface WindowLifecycleConfig {
  readonly name: string;
  readonly assigner: WindowAssigner;
  /** As validated; ignored in processing time. */
  readonly allowedLatenessMs: number;
  /** The late-record routes of all inputs: flushed after every batch, watermark and wake-up. */
  readonly lateRoutes: readonly Pick<LateRecordRoute<unknown>, 'dropped' | 'flush' | 'discard'>[];
  /** The ConfigError message when the operator is opened without keyed state or timers. */
  readonly unkeyedMessage: string;
  missingTimestampError(time: number): Error;
}

/**
 * The base of the window operator and the window join, everything but their contents and inputs: the backend and
 * timers from the task, the window timers and logic for the assigner, the watermark, assigning a batch's records
 * to their windows (late ones to their input's route), firing due timers round by round (each round's output is
 * emitted before the next round starts), and flushing after every batch, watermark and wake-up. It is also the
 * environment fired windows see.
 */
export abstract class WindowLifecycle<K extends Key, OUT> implements FiringEnv<OUT> {
  readonly name: string;
  readonly emitter = new WindowEmitter<OUT>();
  private readonly isEventTime: boolean;
  private readonly lateness: number;
  private watermark = MIN_WATERMARK;

  private ctx!: OperatorContext;
  private output!: Output<OUT>;
  private backend!: KeyedStateBackend;
  private timerService!: InternalTimerService;
  private windowTimers!: WindowTimers;
  private logic!: WindowLogic<K>;

  constructor(private readonly config: WindowLifecycleConfig) {
    this.name = config.name;
    this.isEventTime = config.assigner.isEventTime;
    this.lateness = config.assigner.isEventTime ? config.allowedLatenessMs : 0;
  }

  /** Late records dropped, over all inputs, because their input had no late-data tag. */
  get droppedLateRecords(): number {
    let dropped = 0;
    for (const route of this.config.lateRoutes) dropped += route.dropped;
    return dropped;
  }

  protected openWindows(
    ctx: OperatorContext,
    output: Output<OUT>,
    createContents: (backend: KeyedStateBackend, env: FiringEnv<OUT>) => WindowContents<K>,
  ): void {
    const backend = ctx.keyedState;
    const timers = ctx.timers;
    if (backend === undefined || timers === undefined) throw new ConfigError(this.config.unkeyedMessage);
    this.ctx = ctx;
    this.output = output;
    this.backend = backend;
    this.timerService = timers;
    this.watermark = ctx.currentWatermark();
    this.windowTimers = new WindowTimers(timers, this.isEventTime, (time) => ctx.requestProcessingTimeWakeup(time));
    const contents = createContents(backend, this);
    this.logic = createWindowLogic<K>(this.config.assigner, this.lateness, backend, contents, this.windowTimers);
    // Timers restored from a checkpoint need their wake-up.
    this.windowTimers.requestNextWakeup();
  }

  currentWatermark(): number {
    return this.watermark;
  }

  currentProcessingTime(): number {
    return this.ctx.clock.now();
  }

  /**
   * Reads the batch's keys ahead first when the backend keeps state off the heap (KeyedStateBackend.prefetch),
   * then assigns its records and flushes. `beforeAssign` runs right before the records are assigned.
   */
  protected processInputBatch<V>(
    batch: RecordBatch<V>,
    keySelector: (value: V) => K,
    late: LateRecordRoute<V>,
    beforeAssign?: () => void,
  ): void | Promise<void> {
    return withBatchKeys(this.backend, batch.values, keySelector, () =>
      this.assign(batch, keySelector, late, beforeAssign),
    );
  }

  private assign<V>(
    batch: RecordBatch<V>,
    keySelector: (value: V) => K,
    late: LateRecordRoute<V>,
    beforeAssign: (() => void) | undefined,
  ): void {
    beforeAssign?.();
    const { values, timestamps } = batch;
    const n = values.length;
    const { backend, logic, isEventTime, watermark, lateness } = this;
    // One clock reading per batch: the batch is processed at one instant.
    const now = isEventTime ? 0 : this.ctx.clock.now();
    let i = 0;
    try {
      for (; i < n; i++) {
        const value = values[i] as V;
        const key = keySelector(value);
        if (!isValidKey(key)) throw new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, i), new InvalidKeyError(key));
        let time = now;
        if (isEventTime) {
          time = timestamps[i] as number;
          if (!Number.isFinite(time)) throw this.config.missingTimestampError(time);
        }
        backend.setCurrentKey(key);
        if (!logic.processElement(value, time, key, watermark) && isEventTime && time + lateness <= watermark) {
          late.add(batch, i);
        }
      }
    } catch (err) {
      this.discard();
      if (err instanceof SluiceError) throw err;
      throw new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, i), err);
    }
    this.flush();
  }

  processWatermark(timestamp: number): void | Promise<void> {
    let pending: void | Promise<void> = undefined;
    if (timestamp > this.watermark) {
      this.watermark = timestamp;
      if (this.isEventTime) pending = this.fireDueTimers(timestamp);
    }
    return afterwards(pending, () => {
      this.flush();
      this.output.emitWatermark(timestamp);
    });
  }

  onProcessingTime(time: number): void | Promise<void> {
    if (this.isEventTime) return undefined;
    return afterwards(this.fireDueTimers(time), () => {
      this.windowTimers.requestNextWakeup();
      this.flush();
    });
  }

  /** The job is ending: processing-time windows fire now; event-time ones fired at the final watermark. */
  endInput(): void | Promise<void> {
    if (this.isEventTime) return undefined;
    return afterwards(this.fireDueTimers(Number.POSITIVE_INFINITY), () => this.flush());
  }

  /** Fires due timers round by round (fireTimerRounds: a failed read-ahead is the backend's error, passed on). */
  private fireDueTimers(limit: number): void | Promise<void> {
    const timers = this.timerService;
    const pop = this.isEventTime
      ? (): Timer[] => timers.popEventTimeTimers(limit)
      : (): Timer[] => timers.popProcessingTimeTimers(limit);
    return fireTimerRounds(this.backend, pop, (due) => this.fireRound(due));
  }

  private fireRound(due: readonly Timer[]): void {
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

  /** Drops what a failed batch or round produced (the task restarts from a checkpoint). */
  private discard(): void {
    this.emitter.discard();
    for (const route of this.config.lateRoutes) route.discard();
  }

  private flush(): void {
    this.emitter.flush(this.output);
    for (const route of this.config.lateRoutes) route.flush(this.output);
  }
}
