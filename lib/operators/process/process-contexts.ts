import {
  batchOf,
  ConfigError,
  MIN_WATERMARK,
  NO_TIMESTAMP,
  UserFunctionError,
  type Clock,
  type Key,
  type OutputTag,
  type RecordOrigin,
} from '../../core/index.ts';
import type {
  Collector,
  KeyedRuntimeContext,
  OnTimerContext,
  ProcessContext,
  RuntimeContext,
  TimerService,
} from '../../contracts/functions.ts';
import { VOID_NAMESPACE, type KeyedStateBackend } from '../../state/index.ts';
import type { OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import type { InternalTimerService } from '../../state/timers/timer-service.ts';

/**
 * The pieces the process-function operators share: a collector that buffers one output batch (plus side-output
 * batches) per input batch or timer round, the reusable per-element contexts, and the runtime contexts given to
 * `open`. The operators set the mutable fields (timestamp, key) before each call into user code, so no object is
 * allocated per record.
 */
export class BufferingCollector<OUT> implements Collector<OUT> {
  /** Timestamp given to records collected now. */
  timestamp = NO_TIMESTAMP;
  private values: OUT[] = [];
  private timestamps: number[] = [];
  private sides: Map<string, { tag: OutputTag<unknown>; values: unknown[]; timestamps: number[] }> | undefined;

  collect(value: OUT): void {
    this.values.push(value);
    this.timestamps.push(this.timestamp);
  }

  collectSide<S>(tag: OutputTag<S>, value: S): void {
    this.sides ??= new Map();
    let side = this.sides.get(tag.id);
    if (side === undefined) {
      side = { tag, values: [], timestamps: [] };
      this.sides.set(tag.id, side);
    }
    side.values.push(value);
    side.timestamps.push(this.timestamp);
  }

  /** Emits what was collected (main output first, then side outputs), skipping empty batches. */
  flush(output: Output<OUT>): void {
    if (this.values.length > 0) {
      const batch = batchOf(this.values, this.timestamps);
      this.values = [];
      this.timestamps = [];
      output.emit(batch);
    }
    if (this.sides === undefined) return;
    for (const side of this.sides.values()) {
      if (side.values.length === 0) continue;
      const batch = batchOf(side.values, side.timestamps);
      side.values = [];
      side.timestamps = [];
      output.emitSide(side.tag, batch);
    }
  }

  /** Drops what was collected (after a failure the batch is not emitted). */
  discard(): void {
    this.values = [];
    this.timestamps = [];
    this.sides = undefined;
  }
}

/** Per-element context of non-keyed functions; reused for every element. */
export class ElementContext implements ProcessContext {
  timestamp = NO_TIMESTAMP;
  /** Latest watermark the operator processed. */
  watermark = MIN_WATERMARK;

  constructor(
    protected readonly clock: Clock,
    private readonly collector: BufferingCollector<unknown>,
  ) {}

  currentWatermark(): number {
    return this.watermark;
  }

  currentProcessingTime(): number {
    return this.clock.now();
  }

  output<S>(tag: OutputTag<S>, value: S): void {
    this.collector.collectSide(tag, value);
  }
}

/**
 * Per-element and per-timer context of keyed functions (one object serves as both; `timeDomain` only matters in
 * onTimer). Timers are registered for the current key in the VOID namespace.
 */
export class KeyedElementContext<K extends Key> extends ElementContext implements OnTimerContext<K> {
  currentKey = '' as K;
  timeDomain: 'event' | 'processing' = 'event';
  readonly timerService: TimerService;

  constructor(clock: Clock, collector: BufferingCollector<unknown>, timers: ProcessingTimeAwareTimers) {
    super(clock, collector);
    this.timerService = new KeyedTimerService(this, timers);
  }
}

/** The timer service plus the wake-up bookkeeping for processing time. */
export class ProcessingTimeAwareTimers {
  /** Earliest wake-up requested and not yet delivered (+Infinity when none). */
  private requested = Number.POSITIVE_INFINITY;

  constructor(
    readonly timers: InternalTimerService,
    private readonly operatorContext: OperatorContext,
  ) {}

  registerProcessingTimeTimer(key: Key, timestamp: number): void {
    this.timers.registerProcessingTimeTimer(key, VOID_NAMESPACE, timestamp);
    if (timestamp < this.requested) {
      this.requested = timestamp;
      this.operatorContext.requestProcessingTimeWakeup(timestamp);
    }
  }

  /** After firing up to `time` (or on open): ask for a wake-up at the next pending processing-time timer. */
  scheduleNext(time: number): void {
    if (this.requested <= time) this.requested = Number.POSITIVE_INFINITY;
    const next = this.timers.nextProcessingTime();
    if (next !== undefined && next < this.requested) {
      this.requested = next;
      this.operatorContext.requestProcessingTimeWakeup(next);
    }
  }
}

class KeyedTimerService implements TimerService {
  constructor(
    private readonly ctx: KeyedElementContext<Key>,
    private readonly timers: ProcessingTimeAwareTimers,
  ) {}

  currentProcessingTime(): number {
    return this.ctx.currentProcessingTime();
  }

  currentWatermark(): number {
    return this.ctx.watermark;
  }

  registerEventTimeTimer(timestamp: number): void {
    this.timers.timers.registerEventTimeTimer(this.ctx.currentKey, VOID_NAMESPACE, timestamp);
  }

  registerProcessingTimeTimer(timestamp: number): void {
    this.timers.registerProcessingTimeTimer(this.ctx.currentKey, timestamp);
  }

  deleteEventTimeTimer(timestamp: number): void {
    this.timers.timers.deleteEventTimeTimer(this.ctx.currentKey, VOID_NAMESPACE, timestamp);
  }

  deleteProcessingTimeTimer(timestamp: number): void {
    this.timers.timers.deleteProcessingTimeTimer(this.ctx.currentKey, VOID_NAMESPACE, timestamp);
  }
}

export function runtimeContext(ctx: OperatorContext): RuntimeContext {
  return { operatorName: ctx.operatorName, subtask: ctx.subtask, parallelism: ctx.parallelism };
}

/** Handles come from the operator's backend, in the VOID namespace, scoped to whatever key the operator sets. */
export function keyedRuntimeContext(ctx: OperatorContext, state: KeyedStateBackend): KeyedRuntimeContext {
  return {
    ...runtimeContext(ctx),
    getState: (descriptor) => state.getValueState(descriptor),
    getListState: (descriptor) => state.getListState(descriptor),
    getMapState: (descriptor) => state.getMapState(descriptor),
    getReducingState: (descriptor) => state.getReducingState(descriptor),
    getAggregatingState: (descriptor) => state.getAggregatingState(descriptor),
  };
}

/**
 * Wraps a throw from user code; an error that already names a user function passes through unchanged, and so
 * does a ConfigError the engine threw into user code (a state declaration the restored state contradicts): it is
 * the job's configuration that is wrong, exit code 2, not the function.
 */
export function userFunctionError(
  ctx: OperatorContext,
  operatorName: string,
  origin: RecordOrigin | undefined,
  err: unknown,
): UserFunctionError | ConfigError {
  if (err instanceof UserFunctionError || err instanceof ConfigError) return err;
  return new UserFunctionError(operatorName, ctx.subtask, origin, err);
}
