import type { Collector, ProcessWindowContext, TimeWindow } from '../../contracts/functions.ts';
import type { Key, OutputTag } from '../../core/index.ts';
import type { InternalListState } from '../../state/index.ts';
import type { WindowEmitter } from './window-emitter.ts';

/** Everything a fired window can see besides its contents. */
export interface FiringEnv<OUT> {
  readonly emitter: WindowEmitter<OUT>;
  currentWatermark(): number;
  currentProcessingTime(): number;
}

/** What a process function sees of a fired window; its side output carries the results' `timestamp`. */
export function processWindowContext<K extends Key, OUT>(
  env: FiringEnv<OUT>,
  key: K,
  window: TimeWindow,
  timestamp: number,
): ProcessWindowContext<K> {
  return {
    key,
    window,
    currentWatermark: () => env.currentWatermark(),
    currentProcessingTime: () => env.currentProcessingTime(),
    output: <S>(tag: OutputTag<S>, value: S) => env.emitter.pushSide(tag, value, timestamp),
  };
}

/** Collects a fired window's results with the window's `timestamp`. */
export function windowCollector<OUT>(env: FiringEnv<OUT>, timestamp: number): Collector<OUT> {
  return { collect: (value) => env.emitter.push(value, timestamp) };
}

/** The elements of namespaces first, first + step, ... below end, or undefined when there are none. */
export function gatherElements<T>(
  state: InternalListState<T>,
  first: number,
  step: number,
  end: number,
): T[] | undefined {
  let elements: T[] | undefined;
  for (let ns = first; ns < end; ns += step) {
    state.setCurrentNamespace(ns);
    const slice = state.get();
    if (slice.length === 0) continue;
    // Copy on the second slice: a backend may hand out the array it stores.
    elements = elements === undefined ? slice : elements.concat(slice);
  }
  return elements;
}
