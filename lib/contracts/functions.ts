import type { Key, OutputTag } from '../core/index.ts';
import type {
  AggregateFunction,
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from '../state/index.ts';

export type MapFunction<IN, OUT> = (value: IN) => OUT;
export type FilterFunction<IN> = (value: IN) => boolean;
/** Returns the records to emit for one input: an array (fastest) or any iterable. */
export type FlatMapFunction<IN, OUT> = (value: IN) => Iterable<OUT>;
export type KeySelector<IN, K extends Key> = (value: IN) => K;
export type { AggregateFunction };

export interface Collector<T> {
  /** Emits a record with the timestamp of the element (or timer) being processed. */
  collect(value: T): void;
}

/** What every rich function can see when it opens. */
export interface RuntimeContext {
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
}

/** Keyed state handles, scoped to the key of the element or timer being processed. Create them in `open`. */
export interface KeyedRuntimeContext extends RuntimeContext {
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  getMapState<UK extends Key, V>(descriptor: MapStateDescriptor<UK, V>): MapState<UK, V>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(descriptor: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT>;
}

export interface TimerService {
  currentProcessingTime(): number;
  currentWatermark(): number;
  /** Fires `onTimer` once the watermark reaches `timestamp`. */
  registerEventTimeTimer(timestamp: number): void;
  /** Fires `onTimer` once processing time reaches `timestamp`. */
  registerProcessingTimeTimer(timestamp: number): void;
  deleteEventTimeTimer(timestamp: number): void;
  deleteProcessingTimeTimer(timestamp: number): void;
}

export interface ProcessContext {
  /** Event timestamp of the element being processed (-Infinity when it has none). */
  readonly timestamp: number;
  currentWatermark(): number;
  currentProcessingTime(): number;
  /** Emits to a side output. */
  output<S>(tag: OutputTag<S>, value: S): void;
}

export interface KeyedProcessContext<K extends Key> extends ProcessContext {
  readonly currentKey: K;
  readonly timerService: TimerService;
}

export interface OnTimerContext<K extends Key> extends KeyedProcessContext<K> {
  readonly timeDomain: 'event' | 'processing';
}

/** Non-keyed per-element processing with side outputs. */
export interface ProcessFunction<IN, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement(value: IN, ctx: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

/** Per-key processing with keyed state and timers (the Flink KeyedProcessFunction). */
export interface KeyedProcessFunction<K extends Key, IN, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement(value: IN, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/** Two inputs of different types, not keyed. */
export interface CoProcessFunction<IN1, IN2, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement1(value: IN1, ctx: ProcessContext, out: Collector<OUT>): void;
  processElement2(value: IN2, ctx: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

/** Two keyed inputs sharing one key space: state and timers are per key across both inputs. */
export interface KeyedCoProcessFunction<K extends Key, IN1, IN2, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement1(value: IN1, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  processElement2(value: IN2, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/** A window: [start, end). Results of a window carry the timestamp end - 1. */
export interface TimeWindow {
  readonly start: number;
  readonly end: number;
}

export interface ProcessWindowContext<K extends Key> {
  readonly key: K;
  readonly window: TimeWindow;
  currentWatermark(): number;
  currentProcessingTime(): number;
  output<S>(tag: OutputTag<S>, value: S): void;
}

/** Sees all elements of a window at once (buffers them; prefer reduce/aggregate where possible). */
export interface ProcessWindowFunction<IN, OUT, K extends Key> {
  process(key: K, ctx: ProcessWindowContext<K>, elements: readonly IN[], out: Collector<OUT>): void;
}

/** Result of `reduce` / `aggregate` on a windowed stream when no result function is given. */
export interface WindowResult<K extends Key, V> {
  readonly key: K;
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly value: V;
}

/** Turns a window's reduced or aggregated value into the output record. */
export type WindowResultFunction<K extends Key, V, OUT> = (value: V, key: K, window: TimeWindow) => OUT;
