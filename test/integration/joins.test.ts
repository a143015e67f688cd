import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  collectSink,
  ConfigError,
  EventTimeSessionWindows,
  runInThisThread,
  SlidingEventTimeWindows,
  StreamEnvironment,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  WatermarkStrategy,
  type DataStream,
} from '../../lib/index.ts';
import { collectionSource } from '../../lib/connectors/local/collection-source.ts';

/**
 * The three joins end to end: two collection sources with their own watermarks and random batch boundaries,
 * hash partitioning of both inputs by key, and the join at parallelism 1 and 2. Timestamps drift upward with a
 * jitter the watermark strategy allows for, so no record is late and every join's output is fully determined by
 * the records: it must equal a brute-force computation over all pairs.
 */
interface Ev {
  readonly id: number;
  readonly key: string;
  readonly ts: number;
}

const MAX_JITTER = 20;

const eventsArb = (firstId: number) =>
  fc
    .array(
      fc.record({
        advance: fc.integer({ min: 0, max: 8 }),
        jitter: fc.integer({ min: 0, max: MAX_JITTER }),
        key: fc.integer({ min: 0, max: 5 }),
      }),
      { maxLength: 60 },
    )
    .map((steps) => {
      let clock = 0;
      return steps.map((s, i): Ev => {
        clock += s.advance;
        return { id: firstId + i, key: `k${s.key}`, ts: clock - s.jitter };
      });
    });

const inputsArb = fc.record({
  lefts: eventsArb(0),
  rights: eventsArb(10_000),
  leftBatches: fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 20 }),
  rightBatches: fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 20 }),
  parallelism: fc.constantFrom(1, 2),
});

type Inputs = typeof inputsArb extends fc.Arbitrary<infer I> ? I : never;

function build(inputs: Inputs, delay = MAX_JITTER) {
  const env = new StreamEnvironment({ parallelism: inputs.parallelism });
  const source = (events: readonly Ev[], batchSizes: readonly number[], name: string): DataStream<Ev> =>
    env.fromSource(
      collectionSource(events, { name, timestampOf: (e) => e.ts, batchSizes }),
      WatermarkStrategy.forBoundedOutOfOrderness<Ev>(delay),
    );
  const sink = collectSink<string>('joined');
  return {
    env,
    left: source(inputs.lefts, inputs.leftBatches, 'lefts'),
    right: source(inputs.rights, inputs.rightBatches, 'rights'),
    sink,
    async run(): Promise<string[]> {
      await runInThisThread(env);
      return sink.values.map((v, i) => `${v}@${sink.timestamps[i]}`).sort();
    },
  };
}

const render = (l: Ev, r: Ev): string => `${l.key}|${l.id}|${r.id}`;

/** All pairs with equal keys that `match` accepts, rendered with the timestamp `match` gives (several allowed). */
function bruteForce(inputs: Inputs, match: (l: Ev, r: Ev) => number[]): string[] {
  const out: string[] = [];
  for (const l of inputs.lefts) {
    for (const r of inputs.rights) {
      if (l.key !== r.key) continue;
      for (const ts of match(l, r)) out.push(`${render(l, r)}@${ts}`);
    }
  }
  return out.sort();
}

/** Window ends (exclusive) of the fixed windows holding both timestamps. */
function sharedWindowEnds(a: number, b: number, size: number, slide: number): number[] {
  const ends: number[] = [];
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  for (let start = Math.floor(hi / slide) * slide; start > hi - size; start -= slide) {
    if (start <= lo) ends.push(start + size);
  }
  return ends;
}

/** Sessions per key over both inputs' timestamps: [t, t + gap) windows that overlap or touch merge. */
function sessionEndOf(inputs: Inputs, gap: number): (e: Ev) => number {
  const byKey = new Map<string, number[]>();
  for (const e of [...inputs.lefts, ...inputs.rights]) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e.ts]);
  const sessions = new Map<string, [number, number][]>();
  for (const [key, times] of byKey) {
    const list: [number, number][] = [];
    for (const t of times.sort((x, y) => x - y)) {
      const last = list[list.length - 1];
      if (last !== undefined && t <= last[1]) last[1] = Math.max(last[1], t + gap);
      else list.push([t, t + gap]);
    }
    sessions.set(key, list);
  }
  return (e) => (sessions.get(e.key) ?? []).find(([s, end]) => s <= e.ts && e.ts < end)![1];
}

describe('joins end to end at parallelism 1 and 2', () => {
  it('window join in tumbling and sliding windows equals all pairs per shared window', async () => {
    await fc.assert(
      fc.asyncProperty(
        inputsArb,
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 12 }),
        async (inputs, slidesPerWindow, slide) => {
          const size = slide * slidesPerWindow;
          const job = build(inputs);
          const assigner = slidesPerWindow === 1 ? TumblingEventTimeWindows.of(size) : SlidingEventTimeWindows.of(size, slide);
          job.left
            .join(job.right)
            .where((e) => e.key)
            .equalTo((e) => e.key)
            .window(assigner)
            .apply(render)
            .sinkTo(job.sink);
          const expected = bruteForce(inputs, (l, r) => sharedWindowEnds(l.ts, r.ts, size, slide).map((end) => end - 1));
          expect(await job.run()).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('window join in session windows merges sessions across both inputs', async () => {
    await fc.assert(
      fc.asyncProperty(inputsArb, fc.integer({ min: 1, max: 10 }), async (inputs, gap) => {
        // The watermark stays below every record until the end, so each session fires once, complete.
        const job = build(inputs, 1_000_000);
        job.left
          .join(job.right)
          .where((e) => e.key)
          .equalTo((e) => e.key)
          .window(EventTimeSessionWindows.withGap(gap))
          .apply(render)
          .sinkTo(job.sink);
        const sessionEnd = sessionEndOf(inputs, gap);
        expect(await job.run()).toEqual(bruteForce(inputs, (l, r) => (sessionEnd(l) === sessionEnd(r) ? [sessionEnd(l) - 1] : [])));
      }),
      { numRuns: 40 },
    );
  });

  it('interval join equals all pairs within the bounds, exclusive bounds included', async () => {
    await fc.assert(
      fc.asyncProperty(
        inputsArb,
        fc.integer({ min: -15, max: 15 }),
        fc.integer({ min: 2, max: 25 }),
        fc.boolean(),
        fc.boolean(),
        async (inputs, lower, width, lowerExclusive, upperExclusive) => {
          const upper = lower + width;
          const job = build(inputs);
          let joined = job.left.keyBy((e) => e.key).intervalJoin(job.right.keyBy((e) => e.key)).between(lower, upper);
          if (lowerExclusive) joined = joined.lowerBoundExclusive();
          if (upperExclusive) joined = joined.upperBoundExclusive();
          joined
            .process<string>({
              processElement(l, r, ctx, out) {
                expect([ctx.leftTimestamp, ctx.rightTimestamp]).toEqual([l.ts, r.ts]);
                out.collect(render(l, r));
              },
            })
            .sinkTo(job.sink);
          const lo = lowerExclusive ? lower + 1 : lower;
          const hi = upperExclusive ? upper - 1 : upper;
          const expected = bruteForce(inputs, (l, r) => (r.ts >= l.ts + lo && r.ts <= l.ts + hi ? [Math.max(l.ts, r.ts)] : []));
          expect(await job.run()).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('regular join equals all pairs with equal keys; a retention longer than the input changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(inputsArb, fc.boolean(), async (inputs, retained) => {
        const job = build(inputs);
        const join = job.left.keyBy((e) => e.key).regularJoin(job.right.keyBy((e) => e.key));
        if (retained) join.stateRetention(10_000);
        join.apply(render).sinkTo(job.sink);
        expect(await job.run()).toEqual(bruteForce(inputs, (l, r) => [Math.max(l.ts, r.ts)]));
      }),
      { numRuns: 40 },
    );
  });

  it('late records of an interval join reach their side outputs through the runtime', async () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    // One source feeds both inputs, so the watermark both inputs carry is the same: nothing races.
    const events = env.fromSource(
      collectionSource<Ev>(
        [
          { id: 1, key: 'a', ts: 100 },
          { id: 2, key: 'a', ts: 50 },
          { id: 3, key: 'a', ts: 101 },
        ],
        { timestampOf: (e) => e.ts, batchSizes: [1, 1, 1] },
      ),
      WatermarkStrategy.forMonotonousTimestamps<Ev>(),
    );
    const lateTag = new (await import('../../lib/index.ts')).OutputTag<Ev>('late-left');
    const joined = events
      .keyBy((e) => e.key)
      .intervalJoin(events.keyBy((e) => e.key))
      .between(0, 0)
      .sideOutputLeftLateData(lateTag)
      .apply(render);
    const main = collectSink<string>('main');
    const late = collectSink<Ev>('late');
    joined.sinkTo(main);
    joined.getSideOutput(lateTag).sinkTo(late);
    await runInThisThread(env);
    // Record 2 (ts 50) arrives after the watermark passed 99 on both inputs: late on the left, dropped on the right.
    expect(main.values.sort()).toEqual(['a|1|1', 'a|3|3']);
    expect(late.values).toEqual([{ id: 2, key: 'a', ts: 50 }]);
  });
});

describe('join builders', () => {
  const env = new StreamEnvironment();
  const a = env.fromCollection([{ k: 'x', n: 1 }]);
  const b = env.fromCollection([{ k: 'x', s: 'y' }]);

  it('refuse inverted or collapsed interval bounds, bad retention, lateness on processing time, and foreign streams', () => {
    const keyedA = a.keyBy((v) => v.k);
    const keyedB = b.keyBy((v) => v.k);
    expect(() => keyedA.intervalJoin(keyedB).between(5, 4)).toThrow(ConfigError);
    expect(() =>
      keyedA
        .intervalJoin(keyedB)
        .between(0, 1)
        .lowerBoundExclusive()
        .upperBoundExclusive()
        .apply(() => 0),
    ).toThrow(ConfigError);
    expect(() => keyedA.regularJoin(keyedB).stateRetention(-1)).toThrow(ConfigError);
    expect(() =>
      a
        .join(b)
        .where((v) => v.k)
        .equalTo((v) => v.k)
        .window(TumblingProcessingTimeWindows.of(10))
        .allowedLateness(5)
        .apply(() => 0),
    ).toThrow(ConfigError);
    const other = new StreamEnvironment().fromCollection([{ k: 'x', s: 'z' }]);
    expect(() => a.join(other)).toThrow(ConfigError);
    expect(() => keyedA.intervalJoin(other.keyBy((v) => v.k))).toThrow(ConfigError);
    expect(() => keyedA.regularJoin(other.keyBy((v) => v.k))).toThrow(ConfigError);
  });
});
