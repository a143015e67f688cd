import { generatorSource, systemClock, type Transaction } from '../../lib/index.ts';
import type { GeneratorSourceOptions } from '../../lib/connectors/local/index.ts';

/**
 * Every transaction a generator source with these options produces, read in a plain loop outside any job: the input
 * from which a test computes the output it expects of a job over the same source.
 */
export async function generatedTransactions(options: GeneratorSourceOptions): Promise<Transaction[]> {
  const source = generatorSource(options);
  const reader = await source.createReader(await source.createSplits({ parallelism: 1 }), {
    subtask: 0,
    parallelism: 1,
    clock: systemClock,
    signal: new AbortController().signal,
  });
  const out: Transaction[] = [];
  for (let r = await reader.poll(1000); r.kind !== 'end'; r = await reader.poll(1000)) {
    if (r.kind === 'batch') out.push(...r.batch.values);
  }
  return out;
}

/**
 * What a job counting and summing transactions per account in tumbling event-time windows of `windowMs` writes: one
 * `{account, windowStart, count, total}` JSON line per account and window, sorted.
 */
export function windowTotalLines(transactions: readonly Transaction[], windowMs: number): string[] {
  const acc = new Map<string, { account: string; windowStart: number; count: number; total: number }>();
  for (const t of transactions) {
    const windowStart = t.ts - (t.ts % windowMs);
    const k = `${t.account}@${windowStart}`;
    const a = acc.get(k) ?? { account: t.account, windowStart, count: 0, total: 0 };
    a.count++;
    a.total += t.amountCents;
    acc.set(k, a);
  }
  return [...acc.values()].map((a) => JSON.stringify(a)).sort();
}

/**
 * A map function that passes transactions through and throws once, on the one with event time `failAt.ts`, while
 * `failAt.armed`; it disarms `failAt` first, so the restarted job goes through and the test can see that it threw.
 */
export function failOnceAt(failAt: { readonly ts: number; armed: boolean }): (t: Transaction) => Transaction {
  return (t) => {
    if (failAt.armed && t.ts === failAt.ts) {
      failAt.armed = false;
      throw new Error('injected failure');
    }
    return t;
  };
}
