import type {
  Collector,
  ProcessWindowContext,
  ProcessWindowFunction,
  TimeWindow,
  WindowResultFunction,
} from '../../api/functions.ts';
import type { Key, OutputTag } from '../../core/index.ts';
import {
  aggregatingState,
  listState,
  type AggregateFunction,
  type InternalAggregatingState,
  type InternalListState,
  type KeyedStateBackend,
  type Namespace,
  type ReduceFunction,
} from '../../state/index.ts';
import type { WindowEmitter } from './window-emitter.ts';

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

/** Everything a fired window can see besides its contents. */
export interface FiringEnv<OUT> {
  readonly emitter: WindowEmitter<OUT>;
  currentWatermark(): number;
  currentProcessingTime(): number;
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

class AggregateContents<IN, ACC, V, K extends Key, OUT> implements WindowContents<K> {
  private readonly state: InternalAggregatingState<IN, ACC, V>;

  constructor(
    backend: KeyedStateBackend,
    private readonly aggregate: AggregateFunction<IN, ACC, V>,
    private readonly result: WindowResultFunction<K, V, OUT>,
    private readonly env: FiringEnv<OUT>,
  ) {
    this.state = backend.getAggregatingState(aggregatingState<IN, ACC, V>(CONTENTS_STATE, aggregate));
  }

  setNamespace(namespace: Namespace): void {
    this.state.setCurrentNamespace(namespace);
  }

  add(value: unknown): boolean {
    const created = this.state.getAccumulator() === undefined;
    this.state.add(value as IN);
    return created;
  }

  clear(): void {
    this.state.clear();
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    this.state.mergeNamespaces(target, sources);
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

class ProcessContents<IN, K extends Key, OUT> implements WindowContents<K> {
  private readonly state: InternalListState<IN>;

  constructor(
    backend: KeyedStateBackend,
    private readonly process: ProcessWindowFunction<IN, OUT, K>,
    private readonly env: FiringEnv<OUT>,
  ) {
    this.state = backend.getListState(listState<IN>(CONTENTS_STATE));
  }

  setNamespace(namespace: Namespace): void {
    this.state.setCurrentNamespace(namespace);
  }

  /** ListState has no cheap emptiness test (get() copies), so callers re-register timers; that is idempotent. */
  add(value: unknown): boolean {
    this.state.add(value as IN);
    return true;
  }

  clear(): void {
    this.state.clear();
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    this.state.mergeNamespaces(target, sources);
  }

  fire(key: K, window: TimeWindow, first: number, step: number, end: number): void {
    const state = this.state;
    let elements: IN[] | undefined;
    for (let ns = first; ns < end; ns += step) {
      state.setCurrentNamespace(ns);
      const slice = state.get();
      if (slice.length === 0) continue;
      // Copy on the second slice: a backend may hand out the array it stores.
      elements = elements === undefined ? slice : elements.concat(slice);
    }
    if (elements === undefined) return;
    const env = this.env;
    const timestamp = window.end - 1;
    const ctx: ProcessWindowContext<K> = {
      key,
      window,
      currentWatermark: () => env.currentWatermark(),
      currentProcessingTime: () => env.currentProcessingTime(),
      output: <S>(tag: OutputTag<S>, value: S) => env.emitter.pushSide(tag, value, timestamp),
    };
    const out: Collector<OUT> = { collect: (value) => env.emitter.push(value, timestamp) };
    this.process.process(key, ctx, elements, out);
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
