import type { ProcessWindowFunction, TimeWindow, WindowResultFunction } from '../../contracts/functions.ts';
import type { Key } from '../../core/index.ts';
import {
  aggregatingState,
  listState,
  type AggregateFunction,
  type InternalAggregatingState,
  type InternalListState,
  type KeyedStateBackend,
  type MergingState,
  type Namespace,
  type ReduceFunction,
} from '../../state/index.ts';
import { gatherElements, processWindowContext, windowCollector, type FiringEnv } from './fired-window-context.ts';

/** Name of the keyed state holding window (or slice) contents. */
export const CONTENTS_STATE = 'window-contents';

/**
 * A window's contents in keyed state, for one of the three function kinds, and how a fired window turns them
 * into output. Namespaces are window starts, slice starts or session state ids; the caller sets the current key.
 */
export interface WindowContents<K extends Key> {
  setNamespace(namespace: Namespace): void;
  /**
   * Adds to the current namespace. Returns false only when the namespace certainly held state already, so the
   * caller can skip registering timers that are already registered.
   */
  add(value: unknown): boolean;
  clear(): void;
  /** Moves the contents of `sources` into `target` (session merges). */
  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void;
  /**
   * Emits the result of `window` from the namespaces first, first + step, ... below `end` (one namespace for a
   * tumbling window or a session, the slices for a sliding window). Emits nothing when they are all empty.
   */
  fire(key: K, window: TimeWindow, first: number, step: number, end: number): void;
}

/**
 * A reduce is an aggregate whose accumulator is the reduced value itself (undefined until the first element), so
 * reduce windows share the aggregate path instead of a copy of it.
 */
function reduceAsAggregate<T>(reduce: ReduceFunction<T>): AggregateFunction<T, T | undefined, T> {
  return {
    createAccumulator: () => undefined,
    add: (value, acc) => (acc === undefined ? value : reduce(acc, value)),
    getResult: (acc) => acc as T,
    merge: (a, b) => (a === undefined ? b : b === undefined ? a : reduce(a, b)),
  };
}

/** Contents kept in one merging state, which switches, clears and merges namespaces itself. */
abstract class SingleStateContents<K extends Key, S extends MergingState & { clear(): void }>
  implements WindowContents<K>
{
  constructor(protected readonly state: S) {}

  setNamespace(namespace: Namespace): void {
    this.state.setCurrentNamespace(namespace);
  }

  abstract add(value: unknown): boolean;

  clear(): void {
    this.state.clear();
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    this.state.mergeNamespaces(target, sources);
  }

  abstract fire(key: K, window: TimeWindow, first: number, step: number, end: number): void;
}

class AggregateContents<IN, ACC, V, K extends Key, OUT> extends SingleStateContents<
  K,
  InternalAggregatingState<IN, ACC, V>
> {
  constructor(
    backend: KeyedStateBackend,
    private readonly aggregate: AggregateFunction<IN, ACC, V>,
    private readonly result: WindowResultFunction<K, V, OUT>,
    private readonly env: FiringEnv<OUT>,
  ) {
    super(backend.getAggregatingState(aggregatingState<IN, ACC, V>(CONTENTS_STATE, aggregate)));
  }

  add(value: unknown): boolean {
    const created = this.state.getAccumulator() === undefined;
    this.state.add(value as IN);
    return created;
  }

  fire(key: K, window: TimeWindow, first: number, step: number, end: number): void {
    const state = this.state;
    let merged: ACC | undefined;
    for (let ns = first; ns < end; ns += step) {
      state.setCurrentNamespace(ns);
      const acc = state.getAccumulator();
      if (acc === undefined) continue;
      merged = merged === undefined ? acc : this.aggregate.merge(merged, acc);
    }
    if (merged === undefined) return;
    this.env.emitter.push(this.result(this.aggregate.getResult(merged), key, window), window.end - 1);
  }
}

class ProcessContents<IN, K extends Key, OUT> extends SingleStateContents<K, InternalListState<IN>> {
  constructor(
    backend: KeyedStateBackend,
    private readonly process: ProcessWindowFunction<IN, OUT, K>,
    private readonly env: FiringEnv<OUT>,
  ) {
    super(backend.getListState(listState<IN>(CONTENTS_STATE)));
  }

  /** ListState has no cheap emptiness test (get() copies), so callers re-register timers; that is idempotent. */
  add(value: unknown): boolean {
    this.state.add(value as IN);
    return true;
  }

  fire(key: K, window: TimeWindow, first: number, step: number, end: number): void {
    const elements = gatherElements(this.state, first, step, end);
    if (elements === undefined) return;
    const env = this.env;
    const timestamp = window.end - 1;
    const ctx = processWindowContext(env, key, window, timestamp);
    this.process.process(key, ctx, elements, windowCollector(env, timestamp));
  }
}

export type WindowFunctionSpec<IN, K extends Key, OUT> =
  | {
      readonly kind: 'reduce';
      readonly reduce: ReduceFunction<IN>;
      readonly result: WindowResultFunction<K, IN, OUT>;
    }
  | {
      readonly kind: 'aggregate';
      // The accumulator and aggregate types are erased here; the API layer checks that they line up.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      readonly aggregate: AggregateFunction<IN, any, any>;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      readonly result: WindowResultFunction<K, any, OUT>;
    }
  | { readonly kind: 'process'; readonly process: ProcessWindowFunction<IN, OUT, K> };

export function createWindowContents<IN, K extends Key, OUT>(
  fn: WindowFunctionSpec<IN, K, OUT>,
  backend: KeyedStateBackend,
  env: FiringEnv<OUT>,
): WindowContents<K> {
  switch (fn.kind) {
    case 'reduce':
      return new AggregateContents(backend, reduceAsAggregate(fn.reduce), fn.result, env);
    case 'aggregate':
      return new AggregateContents(backend, fn.aggregate, fn.result, env);
    case 'process':
      return new ProcessContents(backend, fn.process, env);
  }
}
