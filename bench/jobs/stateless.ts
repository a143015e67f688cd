import { defineJob, generatorSource } from 'sluice';
import { countingSink } from '../counting-sink.ts';

/** Stateless pipeline: map then filter over generated transactions. */
export default defineJob({
  name: 'bench-stateless',
  flags: {
    events: { type: 'number', integer: true, min: 1, default: 5_000_000, description: 'records to generate' },
  },
  build(env, flags) {
    env
      .fromSource(generatorSource({ count: flags.events, keyCount: 10_000, seed: 7 }))
      .map((t) => ({ account: t.account, amount: t.amountCents / 100, ts: t.ts }))
      .filter((t) => t.amount >= 10)
      .sinkTo(countingSink());
  },
});
