import type { AggregateFunction, Transaction } from 'sluice';

export interface CountSum {
  readonly count: number;
  readonly total: number;
}

/**
 * Returns a new accumulator for every record: state snapshots share values with working state, so an accumulator
 * mutated in place after a checkpoint's synchronous phase would change the checkpoint being written.
 */
export const countAndSum: AggregateFunction<Transaction, CountSum, CountSum> = {
  createAccumulator: () => ({ count: 0, total: 0 }),
  add: (t, acc) => ({ count: acc.count + 1, total: acc.total + t.amountCents }),
  getResult: (acc) => acc,
  merge: (a, b) => ({ count: a.count + b.count, total: a.total + b.total }),
};
