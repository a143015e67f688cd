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

/**
 * The same, mutating the accumulator in place: wrong with checkpoints (a checkpoint being encoded would see later
 * records). Kept only so that `npm run bench:checkpoints` can measure what immutable accumulators cost.
 */
export const countAndSumInPlace: AggregateFunction<Transaction, { count: number; total: number }, CountSum> = {
  createAccumulator: () => ({ count: 0, total: 0 }),
  add(t, acc) {
    acc.count++;
    acc.total += t.amountCents;
    return acc;
  },
  getResult: (acc) => acc,
  merge: (a, b) => ({ count: a.count + b.count, total: a.total + b.total }),
};
