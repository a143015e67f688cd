import type { AggregateFunction, Transaction } from 'sluice';

export interface CountSum {
  count: number;
  total: number;
}

/** Mutates the accumulator in place: it is owned by one key and window. */
export const countAndSum: AggregateFunction<Transaction, CountSum, CountSum> = {
  createAccumulator: () => ({ count: 0, total: 0 }),
  add(t, acc) {
    acc.count++;
    acc.total += t.amountCents;
    return acc;
  },
  getResult: (acc) => acc,
  merge: (a, b) => ({ count: a.count + b.count, total: a.total + b.total }),
};
