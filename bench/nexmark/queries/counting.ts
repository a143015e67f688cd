import type { AggregateFunction } from 'sluice';

/** count(*): the accumulator is a number, so no object is allocated per record. */
export const countAll: AggregateFunction<unknown, number, number> = {
  createAccumulator: () => 0,
  add: (_value, count) => count + 1,
  getResult: (count) => count,
  merge: (a, b) => a + b,
};
