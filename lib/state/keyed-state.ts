import type { Key } from '../core/index.ts';

/**
 * Keyed state handles. Every handle is scoped to the backend's current key (and, for internal users such as the
 * window operator, the current namespace). The API is synchronous on purpose: state access sits on the per-record
 * hot path, and backends keep an in-memory cache so that no access needs an await.
 */
export interface ValueState<T> {
  value(): T | undefined;
  update(value: T): void;
  clear(): void;
}

export interface ListState<T> {
  /** The elements, oldest first; an empty array when there are none. */
  get(): T[];
  add(value: T): void;
  addAll(values: readonly T[]): void;
  update(values: readonly T[]): void;
  clear(): void;
}

export interface MapState<UK extends Key, V> {
  get(key: UK): V | undefined;
  put(key: UK, value: V): void;
  putAll(entries: Iterable<readonly [UK, V]>): void;
  remove(key: UK): void;
  contains(key: UK): boolean;
  entries(): [UK, V][];
  keys(): UK[];
  values(): V[];
  isEmpty(): boolean;
  clear(): void;
}

export interface ReducingState<T> {
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

export interface AggregatingState<IN, OUT> {
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}

/** Window and timer namespaces are primitives so that they can key a Map without encoding. */
export type Namespace = string | number;
export const VOID_NAMESPACE: Namespace = '';

/** The internal view of a state handle: its namespace can be switched (window operator, slices). */
export interface InternalState {
  setCurrentNamespace(namespace: Namespace): void;
}

/** States whose contents can be merged across namespaces (session windows, slices of a sliding window). */
export interface MergingState extends InternalState {
  /** Merges the contents of `sources` into `target` and clears the sources, all for the current key. */
  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void;
}

export type InternalValueState<T> = ValueState<T> & InternalState;
export type InternalListState<T> = ListState<T> & MergingState;
export type InternalMapState<UK extends Key, V> = MapState<UK, V> & InternalState;
export type InternalReducingState<T> = ReducingState<T> & MergingState;
export type InternalAggregatingState<IN, ACC, OUT> = AggregatingState<IN, OUT> &
  MergingState & {
    /** The raw accumulator, for slice merging. */
    getAccumulator(): ACC | undefined;
  };
