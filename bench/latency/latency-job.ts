/**
 * The latency benchmark's job: a fixed-rate source (fixed-rate-source.ts) into one of two pipelines, and a sink that
 * records latencies.
 *
 *   npx sluice run bench/latency/latency-job.ts --pipeline stateless --rate 100000 --parallelism 2
 *     [--seconds 30] [--warmup-seconds 5] [--keys 1000] [--window-ms 1000] [--checkpoint-dir DIR ...]
 *
 * - stateless: map, filter, rebalance (a shuffle between the worker threads), map; latency = arrival at the sink -
 *   the record's intended emission time.
 * - window: keyBy, 1 s tumbling event-time window counting per key (event time = intended emission time);
 *   latency = arrival of a result at the sink - the moment the watermark closing its window left the sources.
 *
 * Ends with `latency-result: samples=<n> p50=<ms> p99=<ms> p999=<ms> max=<ms>`; with --rate 0 the source runs
 * flat out instead and the job ends with `latency-throughput: <events/s>` (after the warm-up).
 */
import { isMainThread } from 'node:worker_threads';
import { TumblingEventTimeWindows, WatermarkStrategy, defineJob, type AggregateFunction } from 'sluice';
import { collectLatency } from './collector.ts';
import { fixedRateSource } from './fixed-rate-source.ts';
import type { LatencyRecord, WindowCount } from './record.ts';
import { recordLatencySink, windowLatencySink } from './sinks.ts';
import { WindowClosingGenerator } from './window-closing.ts';

const count: AggregateFunction<LatencyRecord, number, number> = {
  createAccumulator: () => 0,
  add: (_record, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

export default defineJob({
  name: 'latency',
  description: 'a fixed-rate source into a stateless or a keyed-window pipeline; prints latency percentiles',
  flags: {
    pipeline: { type: 'string', required: true, choices: ['stateless', 'window'], description: 'which pipeline to measure' },
    rate: { type: 'number', min: 0, default: 100_000, description: 'records per second over all source subtasks (0: as fast as possible, prints the throughput)' },
    seconds: { type: 'number', min: 0.1, default: 30, description: 'measured seconds (after the warm-up)' },
    warmupSeconds: { type: 'number', min: 0, default: 5, description: 'seconds before the measurement starts' },
    keys: { type: 'number', integer: true, min: 1, default: 1000, description: 'distinct keys' },
    windowMs: { type: 'number', integer: true, min: 1, default: 1000, description: 'tumbling window size (window pipeline)' },
  },
  build(env, flags) {
    const parallelism = env.options.parallelism;
    const source = fixedRateSource({ rate: flags.rate, seconds: flags.seconds, warmupSeconds: flags.warmupSeconds, keys: flags.keys });
    if (flags.pipeline === 'stateless') {
      env
        .fromSource(source, WatermarkStrategy.noWatermarks<LatencyRecord>(), 'fixed-rate')
        .map((r): LatencyRecord => ({ key: r.key * 31 + 7, stamp: r.stamp, measured: r.measured }), 'scramble key')
        // Drops a tenth: those records are simply not measured.
        .filter((r) => r.key % 10 !== 3, 'drop a tenth')
        .rebalance()
        .map((r): LatencyRecord => ({ key: r.key >> 1, stamp: r.stamp, measured: r.measured }), 'shift key')
        .sinkTo(recordLatencySink(), 'latency');
    } else {
      const windowMs = flags.windowMs;
      env
        .fromSource(source, WatermarkStrategy.forGenerator(() => new WindowClosingGenerator(windowMs)), 'fixed-rate')
        .keyBy((r) => r.key)
        .window(TumblingEventTimeWindows.of(windowMs))
        .aggregate(count, (n, key, window): WindowCount => ({ key, count: n, end: window.end }), 'count per key')
        .sinkTo(windowLatencySink(parallelism), 'window-latency');
    }
    // The coordinating thread builds the job too (to plan it): it collects the result and prints it at exit.
    if (isMainThread) collectLatency(flags.rate > 0 ? 'latency' : 'throughput', parallelism);
  },
});
