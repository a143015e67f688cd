import { generatorSource, type Transaction } from 'sluice';
import { systemClock } from '../lib/core/index.ts';
import type { GeneratorSplit } from '../lib/connectors/local/generator-source.ts';

/** Reads the generator directly, batch by batch, in this thread: the baselines' input, identical to the jobs'. */
async function* generated(options: Parameters<typeof generatorSource>[0]): AsyncGenerator<Transaction[]> {
  const source = generatorSource(options);
  const splits = (await source.createSplits({ parallelism: 1 })) as GeneratorSplit[];
  const reader = await source.createReader(splits, { subtask: 0, parallelism: 1, clock: systemClock, signal: new AbortController().signal });
  for (;;) {
    const r = await reader.poll(1024);
    if (r.kind === 'end') return;
    if (r.kind === 'batch') yield r.batch.values;
  }
}

/** The stateless job's work as a plain loop. */
export async function statelessBaseline(events: number): Promise<number> {
  let kept = 0;
  for await (const batch of generated({ count: events, keyCount: 10_000, seed: 7 })) {
    const out = [];
    for (const t of batch) {
      const m = { account: t.account, amount: t.amountCents / 100, ts: t.ts };
      if (m.amount >= 10) out.push(m);
    }
    kept += out.length;
  }
  return kept;
}

/** The keyed window job's work as a plain loop: per-window maps of accounts, fired as the watermark passes. */
export async function keyedWindowBaseline(events: number, keys: number): Promise<number> {
  const windows = new Map<number, Map<string, { count: number; total: number }>>();
  let maxTs = Number.NEGATIVE_INFINITY;
  let fired = 0;
  const fire = (watermark: number) => {
    for (const [start, accounts] of windows) {
      if (start + 10_000 - 1 <= watermark) {
        const out = [];
        for (const [account, acc] of accounts) out.push({ account, windowStart: start, windowEnd: start + 10_000, count: acc.count, totalCents: acc.total });
        fired += out.length;
        windows.delete(start);
      }
    }
  };
  for await (const batch of generated({ count: events, keyCount: keys, seed: 11, startTime: 1_700_000_000_000, maxOutOfOrdernessMs: 500 })) {
    for (const t of batch) {
      const start = t.ts - (t.ts % 10_000);
      let accounts = windows.get(start);
      if (accounts === undefined) windows.set(start, (accounts = new Map()));
      const acc = accounts.get(t.account);
      if (acc === undefined) accounts.set(t.account, { count: 1, total: t.amountCents });
      else {
        acc.count++;
        acc.total += t.amountCents;
      }
      if (t.ts > maxTs) maxTs = t.ts;
    }
    fire(maxTs - 1_000 - 1);
  }
  fire(Number.POSITIVE_INFINITY);
  return fired;
}
