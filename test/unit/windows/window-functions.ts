import type { ProcessWindowFunction, TimeWindow } from '../../../lib/contracts/functions.ts';
import type { AggregateFunction, ReduceFunction } from '../../../lib/state/index.ts';
import type { WindowFunctionSpec } from '../../../lib/operators/windows/window-operator.ts';

/** Test record: a key, a value, and an id to recognise it in side outputs. */
export interface Ev {
  readonly key: string;
  readonly v: number;
  readonly id: number;
}

/** What every test window function emits, so that results can be compared with the model's firings. */
export interface Out {
  readonly key: string;
  readonly start: number;
  readonly end: number;
  readonly value: unknown;
}

export type FnKind = 'reduce' | 'aggregate' | 'process';

interface Stats {
  readonly count: number;
  readonly sum: number;
  readonly min: number;
  readonly max: number;
}

// Commutative and associative, and none mutates its inputs: results do not depend on slicing or merge order.
export const sumReduce: ReduceFunction<Ev> = (a, b) => ({ key: a.key, v: a.v + b.v, id: -1 });

export const statsAggregate: AggregateFunction<Ev, Stats, Stats> = {
  createAccumulator: () => ({ count: 0, sum: 0, min: Infinity, max: -Infinity }),
  add: (e, acc) => ({ count: acc.count + 1, sum: acc.sum + e.v, min: Math.min(acc.min, e.v), max: Math.max(acc.max, e.v) }),
  getResult: (acc) => acc,
  merge: (a, b) => ({
    count: a.count + b.count,
    sum: a.sum + b.sum,
    min: Math.min(a.min, b.min),
    max: Math.max(a.max, b.max),
  }),
};

export const sortedValuesProcess: ProcessWindowFunction<Ev, Out, string> = {
  process(key, ctx, elements, out) {
    const values = elements.map((e) => e.v).sort((a, b) => a - b);
    out.collect({ key, start: ctx.window.start, end: ctx.window.end, value: values });
  },
};

const toOut = <V>(value: V, key: string, window: TimeWindow): Out => ({ key, start: window.start, end: window.end, value });

export function windowFunction(kind: FnKind): WindowFunctionSpec<Ev, string, Out> {
  switch (kind) {
    case 'reduce':
      return { kind, reduce: sumReduce, result: (value, key, window) => toOut(value.v, key, window) };
    case 'aggregate':
      return { kind, aggregate: statsAggregate, result: toOut };
    case 'process':
      return { kind, process: sortedValuesProcess };
  }
}

/** The result the window function above produces for a window with these elements. */
export function expectedValue(kind: FnKind, elements: readonly Ev[]): unknown {
  switch (kind) {
    case 'reduce':
      return elements.reduce((sum, e) => sum + e.v, 0);
    case 'aggregate': {
      let acc = statsAggregate.createAccumulator();
      for (const e of elements) acc = statsAggregate.add(e, acc);
      return acc;
    }
    case 'process':
      return elements.map((e) => e.v).sort((a, b) => a - b);
  }
}
