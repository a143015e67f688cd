import { describe, expect, it } from 'vitest';
import {
  StreamEnvironment,
  collectSink,
  runInThisThread,
  OutputTag,
  JobFailedError,
  UserFunctionError,
  WatermarkStrategy,
  valueState,
  type Source,
  type ValueState,
  type KeyedProcessFunction,
  type KeyedRuntimeContext,
  type KeyedProcessContext,
  type OnTimerContext,
  type Collector,
} from '../../../lib/index.ts';

/** State handles live on `this`: every subtask gets its own instance of the function object. */
class CountUntilEnd implements KeyedProcessFunction<string, { key: string; ts: number }, string> {
  private count!: ValueState<number>;
  open(ctx: KeyedRuntimeContext): void {
    this.count = ctx.getState(valueState<number>('count'));
  }
  processElement(_e: { key: string; ts: number }, ctx: KeyedProcessContext<string>): void {
    const c = (this.count.value() ?? 0) + 1;
    this.count.update(c);
    if (c === 1) ctx.timerService.registerEventTimeTimer(1_000_000);
  }
  onTimer(ts: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
    out.collect(`${ctx.currentKey}=${this.count.value()}@${ts}`);
  }
}

describe('in-thread runner', () => {
  it('runs map, filter and flatMap at parallelism 3 without losing or duplicating records', async () => {
    const env = new StreamEnvironment({ parallelism: 3, batchSize: 7 });
    const input = Array.from({ length: 1000 }, (_, i) => i);
    const sink = collectSink<number>();
    env
      .fromCollection(input)
      .map((x) => x * 2)
      .filter((x) => x % 3 !== 0)
      .flatMap((x) => [x, -x])
      .sinkTo(sink);
    const result = await runInThisThread(env);
    const expected = input.map((x) => x * 2).filter((x) => x % 3 !== 0).flatMap((x) => [x, -x]);
    expect([...sink.values].sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
    expect(sink.finishedWriters).toBe(3);
    expect(result.sourceRecords).toBe(1000);
  });

  it('unions streams and routes side outputs', async () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const odd = new OutputTag<number>('odd');
    const evens = collectSink<number>('evens');
    const odds = collectSink<number>('odds');
    const main = env
      .fromCollection([1, 2, 3])
      .union(env.fromCollection([4, 5, 6]))
      .process<number>({
        processElement(value, ctx, out) {
          if (value % 2 === 0) out.collect(value);
          else ctx.output(odd, value);
        },
      });
    main.sinkTo(evens);
    main.getSideOutput(odd).sinkTo(odds);
    await runInThisThread(env);
    expect([...evens.values].sort()).toEqual([2, 4, 6]);
    expect([...odds.values].sort()).toEqual([1, 3, 5]);
  });

  it('gives keyed process functions per-key state and event-time timers across parallel subtasks', async () => {
    const env = new StreamEnvironment({ parallelism: 4 });
    const sink = collectSink<string>();
    const events = Array.from({ length: 400 }, (_, i) => ({ key: `k${i % 10}`, ts: i }));
    env
      .fromCollection(events, { timestampOf: (e) => e.ts, batchSize: 13 })
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps())
      .keyBy((e) => e.key)
      .process(new CountUntilEnd())
      .sinkTo(sink);
    await runInThisThread(env);
    expect([...sink.values].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}=40@1000000`).sort());
  });

  it('fires processing-time timers through the task mailbox while the source is still running', async () => {
    const started = Date.now();
    let polls = 0;
    // One batch, then nothing for a while (the timers must fire in that pause), then the end.
    const source: Source<string> = {
      name: 'slow',
      bounded: true,
      createSplits: () => [{ id: 'only' }],
      createReader: () => ({
        poll: () => {
          polls++;
          if (polls === 1) return { kind: 'batch', batch: { values: ['a', 'b'], timestamps: [0, 0], split: 'only', offsets: [0, 1] } };
          return Date.now() - started < 300 ? { kind: 'wait', retryAfterMs: 10 } : { kind: 'end' };
        },
        currentSplits: () => [],
        close() {},
      }),
    };
    const env = new StreamEnvironment({ parallelism: 2 });
    const sink = collectSink<string>();
    env
      .fromSource(source)
      .keyBy((k) => k)
      .process<string>({
        processElement(_v, ctx) {
          ctx.timerService.registerProcessingTimeTimer(ctx.currentProcessingTime() + 20);
        },
        onTimer(_ts, ctx, out) {
          out.collect(`${ctx.currentKey}:${ctx.timeDomain}`);
        },
      })
      .sinkTo(sink)
      .setParallelism(2);
    await runInThisThread(env);
    // Processing-time timers do not fire at end of input, so these came from wake-ups during the run.
    expect([...sink.values].sort()).toEqual(['a:processing', 'b:processing']);
  });

  it('connects two streams into a co-process function', async () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const sink = collectSink<string>();
    env
      .fromCollection(['a', 'b'])
      .connect(env.fromCollection([1, 2, 3]))
      .process<string>({
        processElement1: (v, _c, out) => out.collect(`s:${v}`),
        processElement2: (v, _c, out) => out.collect(`n:${v}`),
      })
      .sinkTo(sink);
    await runInThisThread(env);
    expect([...sink.values].sort()).toEqual(['n:1', 'n:2', 'n:3', 's:a', 's:b']);
  });

  it('fails the job with operator, subtask and record origin when user code throws, without hanging', async () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    env
      .fromCollection(Array.from({ length: 100 }, (_, i) => i), { batchSize: 10 })
      .map((x) => {
        if (x === 42) throw new Error('boom at 42');
        return x;
      }, 'Explode')
      .sinkTo(collectSink());
    const failure = await runInThisThread(env).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(JobFailedError);
    const cause = (failure as JobFailedError).cause as UserFunctionError;
    expect(cause).toBeInstanceOf(UserFunctionError);
    expect(cause.operator).toBe('Explode');
    expect(cause.origin).toEqual({ split: 'collection', offset: 42 });
    expect(cause.message).toMatch(/operator "Explode" \(subtask \d\) failed on record from split collection offset 42: boom at 42/);
  });

  it('keeps memory bounded: a fast source waits for a slow sink', async () => {
    let produced = 0;
    let written = 0;
    let maxAhead = 0;
    const source: Source<number> = {
      name: 'fast',
      bounded: true,
      createSplits: () => [{ id: 'only' }],
      createReader: () => ({
        poll: () => {
          if (produced >= 20_000) return { kind: 'end' };
          const values = Array.from({ length: 100 }, (_, i) => produced + i);
          produced += 100;
          maxAhead = Math.max(maxAhead, produced - written);
          return { kind: 'batch', batch: { values, timestamps: values.map(() => 0), split: 'only', offsets: values } };
        },
        currentSplits: () => [],
        close() {},
      }),
    };
    const env = new StreamEnvironment({ parallelism: 1, channelCapacity: 4 });
    env
      .fromSource(source)
      .rebalance()
      .map((x) => x)
      .setParallelism(2)
      .sinkTo({
        name: 'slow',
        createWriter: () => ({
          write: async (batch) => {
            await new Promise((r) => setTimeout(r, 1));
            written += batch.values.length;
          },
        }),
      })
      .setParallelism(2);
    await runInThisThread(env);
    expect(written).toBe(20_000);
    // 2 channels x 4 batches in flight, plus a batch being written per subtask and one being produced.
    expect(maxAhead).toBeLessThanOrEqual((2 * 4 + 2 + 1) * 100);
  });
});
