import type { Key } from '../core/index.ts';

/**
 * How long state lives without being touched. Expired values are never returned; they are removed lazily on
 * access and during snapshots.
 */
export interface StateTtlConfig {
  /** Time to live in milliseconds of processing time. */
  readonly ttlMs: number;
  /** Which accesses renew the timestamp. @default 'onCreateAndWrite' */
  readonly updateType?: 'onCreateAndWrite' | 'onReadAndWrite';
}

/** Combines two values into one; must be associative (it is used to merge windows and slices). */
export type ReduceFunction<T> = (a: T, b: T) => T;

/** Incremental aggregation: constant-size accumulator per key and window. */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  /** Merges two accumulators (session windows, sliding-window slices). */
  merge(a: ACC, b: ACC): ACC;
}

interface DescriptorBase {
  /** Unique per operator. */
  readonly name: string;
  readonly ttl?: StateTtlConfig | undefined;
}

export interface ValueStateDescriptor<T> extends DescriptorBase {
  readonly kind: 'value';
  readonly __type?: T;
}
export interface ListStateDescriptor<T> extends DescriptorBase {
  readonly kind: 'list';
  readonly __type?: T;
}
export interface MapStateDescriptor<UK extends Key, V> extends DescriptorBase {
  readonly kind: 'map';
  readonly __type?: [UK, V];
}
export interface ReducingStateDescriptor<T> extends DescriptorBase {
  readonly kind: 'reducing';
  readonly reduce: ReduceFunction<T>;
}
export interface AggregatingStateDescriptor<IN, ACC, OUT> extends DescriptorBase {
  readonly kind: 'aggregating';
  readonly aggregate: AggregateFunction<IN, ACC, OUT>;
}

export type StateDescriptor =
  | ValueStateDescriptor<unknown>
  | ListStateDescriptor<unknown>
  | MapStateDescriptor<Key, unknown>
  | ReducingStateDescriptor<unknown>
  | AggregatingStateDescriptor<unknown, unknown, unknown>;

export const valueState = <T>(name: string, ttl?: StateTtlConfig): ValueStateDescriptor<T> => ({ kind: 'value', name, ttl });
export const listState = <T>(name: string, ttl?: StateTtlConfig): ListStateDescriptor<T> => ({ kind: 'list', name, ttl });
export const mapState = <UK extends Key, V>(name: string, ttl?: StateTtlConfig): MapStateDescriptor<UK, V> => ({
  kind: 'map',
  name,
  ttl,
});
export const reducingState = <T>(name: string, reduce: ReduceFunction<T>, ttl?: StateTtlConfig): ReducingStateDescriptor<T> => ({
  kind: 'reducing',
  name,
  reduce,
  ttl,
});
export const aggregatingState = <IN, ACC, OUT>(
  name: string,
  aggregate: AggregateFunction<IN, ACC, OUT>,
  ttl?: StateTtlConfig,
): AggregatingStateDescriptor<IN, ACC, OUT> => ({ kind: 'aggregating', name, aggregate, ttl });
