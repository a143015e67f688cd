import { defineJob, generatorSource, TumblingEventTimeWindows, WatermarkStrategy, type Transaction } from 'sluice';
import { countingSink } from '../counting-sink.ts';
import { countAndSum, countAndSumInPlace } from '../count-and-sum.ts';

/** Keyed 10 s tumbling event-time window computing count and sum per account. */
export default defineJob({
  name: 'bench-keyed-window',
  flags: {
    events: { type: 'number', integer: true, min: 1, default: 3_000_000, description: 'records to generate' },
    keys: { type: 'number', integer: true, min: 1, default: 10_000, description: 'distinct accounts' },
    inPlace: { type: 'boolean', default: false, description: 'mutate accumulators in place (unsafe with checkpoints; to measure their cost)' },
  },
  build(env, flags) {
    env
      .fromSource(
        // 1 ms of event time per record: 10,000 records per 10 s window.
        generatorSource({ count: flags.events, keyCount: flags.keys, seed: 11, startTime: 1_700_000_000_000, maxOutOfOrdernessMs: 500 }),
        WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(1_000),
      )
      .keyBy((t) => t.account)
      .window(TumblingEventTimeWindows.of(10_000))
      .aggregate(flags.inPlace ? countAndSumInPlace : countAndSum, (acc, account, w) => ({ account, windowStart: w.start, windowEnd: w.end, count: acc.count, totalCents: acc.total }))
      .sinkTo(countingSink());
  },
});
