import type { Key, OutputTag } from '../core/index.ts';
import type { Collector, KeyedRuntimeContext, ProcessWindowContext } from './functions.ts';

/** Turns one matching pair into one output record (Flink's JoinFunction). */
export type JoinFunction<IN1, IN2, OUT> = (first: IN1, second: IN2) => OUT;

/** What a ProcessJoinFunction can see about the pair it is given. */
export interface ProcessJoinContext<K extends Key> {
  readonly currentKey: K;
  /** Event timestamp of the first input's record (-Infinity when it has none). */
  readonly leftTimestamp: number;
  /** Event timestamp of the second input's record (-Infinity when it has none). */
  readonly rightTimestamp: number;
  /** Timestamp of what `out.collect` emits: the larger of the two. */
  readonly timestamp: number;
  currentWatermark(): number;
  currentProcessingTime(): number;
  /** Emits to a side output, with `timestamp`. */
  output<S>(tag: OutputTag<S>, value: S): void;
}

/**
 * Called once per matching pair of an interval join or a regular join (Flink's ProcessJoinFunction). `open` gets
 * keyed state handles, scoped to the key of the pair being processed.
 */
export interface ProcessJoinFunction<IN1, IN2, OUT, K extends Key = Key> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement(left: IN1, right: IN2, ctx: ProcessJoinContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/**
 * Called once per key and fired window in which both inputs have elements, with all of them (in the order the
 * window kept them). A Sluice addition to Flink's window join, for joins that need the window or that emit one
 * record per group rather than one per pair.
 */
export interface ProcessWindowJoinFunction<IN1, IN2, OUT, K extends Key> {
  process(key: K, ctx: ProcessWindowContext<K>, first: readonly IN1[], second: readonly IN2[], out: Collector<OUT>): void;
}

/** Which clock measures a regular join's state retention. */
export type RetentionTimeDomain = 'event' | 'processing';
