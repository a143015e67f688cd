/**
 * The Nexmark benchmark as one Sluice job: the generator as the source, one query, results discarded.
 *
 *   npx sluice run bench/nexmark/nexmark.ts --query q5 --events 10000000 [--parallelism 2] [--rate 10000000]
 *     [--seed 0] [--out-of-order-group-size 1] [--output DIR]
 *
 * Ends with the line `q5: <events> events in <seconds> s = <rate> events/s`, timed from the first generated event
 * to the last result reaching the sink (see timing.ts). With --output the results are written as JSON lines to
 * DIR instead (for checking them; the line is not printed then).
 */
import { isMainThread } from 'node:worker_threads';
import { defineJob, jsonlFileSink } from 'sluice';
import { DEFAULT_RATE } from './config.ts';
import { QUERIES, QUERY_NAMES } from './queries/index.ts';
import { nexmarkSource, nexmarkWatermarks } from './source.ts';
import { timedDiscardingSink, timedSource } from './timed.ts';
import { collectTiming } from './timing.ts';

export default defineJob({
  name: 'nexmark',
  description: 'a Nexmark query over the deterministic Nexmark generator, into a discarding sink',
  flags: {
    query: { type: 'string', required: true, choices: QUERY_NAMES, description: 'which query to run' },
    events: { type: 'number', integer: true, min: 0, default: 10_000_000, description: 'events to generate (1 person : 3 auctions : 46 bids)' },
    rate: {
      type: 'number',
      integer: true,
      min: 1,
      default: DEFAULT_RATE,
      description: 'events per second of synthetic event time (not a throttle: the source runs as fast as it can)',
    },
    seed: { type: 'number', integer: true, min: 0, default: 0, description: 'generator seed: the same seed gives the same events at any parallelism' },
    outOfOrderGroupSize: {
      type: 'number',
      integer: true,
      min: 1,
      default: 1,
      description: 'events are emitted in pseudo-random order within groups of this many',
    },
    output: { type: 'string', description: 'write the results as JSON lines into this directory instead of discarding them' },
  },
  build(env, flags) {
    const query = QUERIES[flags.query];
    if (query === undefined) throw new Error(`unknown query ${flags.query}`);
    const source = nexmarkSource({ events: flags.events, rate: flags.rate, seed: flags.seed, outOfOrderGroupSize: flags.outOfOrderGroupSize });
    if (flags.output !== undefined) {
      query.build(env.fromSource(source, nexmarkWatermarks(), 'nexmark')).sinkTo(jsonlFileSink({ dir: flags.output }), 'results');
      return;
    }
    query.build(env.fromSource(timedSource(source), nexmarkWatermarks(), 'nexmark')).sinkTo(timedDiscardingSink(), 'discard');
    // The coordinating thread builds the job too (to plan it): it collects the measurement and prints it at exit.
    if (isMainThread) collectTiming(query.name, env.options.parallelism, flags.events);
  },
});
