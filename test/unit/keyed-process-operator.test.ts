import { describe, expect, it } from 'vitest';
import {
  batchOf,
  InternalError,
  MAX_WATERMARK,
  NO_TIMESTAMP,
  OutputTag,
  UserFunctionError,
} from '../../lib/core/index.ts';
import type { KeyedProcessFunction, KeyedRuntimeContext } from '../../lib/contracts/functions.ts';
import { KeyedProcessOperator } from '../../lib/operators/process/keyed-process-operator.ts';
import { valueState, type ValueState } from '../../lib/state/index.ts';
import { OperatorTestHarness } from '../harness/operator-test-context.ts';

interface Event {
  key: string;
  n: number;
}
const ev = (key: string, n = 1): Event => ({ key, n });
const byKey = (e: Event): string => e.key;

/** Running sum per key; emits "key:sum" per element. */
function runningSum(): KeyedProcessFunction<string, Event, string> {
  let sum!: ValueState<number>;
  return {
    open(ctx) {
      sum = ctx.getState(valueState<number>('sum'));
    },
    processElement(value, ctx, out) {
      const next = (sum.value() ?? 0) + value.n;
      sum.update(next);
      out.collect(`${ctx.currentKey}:${next}`);
    },
  };
}

describe('KeyedProcessOperator', () => {
  it('keeps state per key and emits one batch per input batch with the input timestamps', async () => {
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('sum', byKey, runningSum()));
    await h.processElements([ev('a', 1), ev('b', 10), ev('a', 2)], [100, 200, 300]);
    await h.processElements([], []);
    await h.processElements([ev('b', 5)], [400]);
    expect(h.output.batches).toHaveLength(2);
    expect(h.output.records()).toEqual([
      { value: 'a:1', timestamp: 100 },
      { value: 'b:10', timestamp: 200 },
      { value: 'a:3', timestamp: 300 },
      { value: 'b:15', timestamp: 400 },
    ]);
    expect(h.backend?.entryCount()).toBe(2);
  });

  it('skips the batch when the function collects nothing', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = { processElement() {} };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('none', byKey, fn));
    await h.processElements([ev('a')], [1]);
    expect(h.output.batches).toEqual([]);
  });

  it('shows the function the element timestamp, key, watermark and processing time', async () => {
    const seen: unknown[] = [];
    const fn: KeyedProcessFunction<string, Event, never> = {
      processElement(_v, ctx) {
        seen.push([ctx.currentKey, ctx.timestamp, ctx.currentWatermark(), ctx.currentProcessingTime()]);
        seen.push([ctx.timerService.currentWatermark(), ctx.timerService.currentProcessingTime()]);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('ctx', byKey, fn), { processingTime: 7 });
    await h.processWatermark(50);
    await h.processElement(ev('x'), 60);
    expect(seen).toEqual([
      ['x', 60, 50, 7],
      [50, 7],
    ]);
  });

  it('gives open a runtime context with the operator name and subtask', async () => {
    let ctx: KeyedRuntimeContext | undefined;
    const fn: KeyedProcessFunction<string, Event, never> = {
      open(c) {
        ctx = c;
      },
      processElement() {},
    };
    await OperatorTestHarness.open(new KeyedProcessOperator('named', byKey, fn), { subtask: 1, parallelism: 2 });
    expect(ctx).toMatchObject({ operatorName: 'named', subtask: 1, parallelism: 2 });
  });

  it('fires event-time timers on the watermark in timestamp order, per key, before forwarding the watermark', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(value, ctx) {
        ctx.timerService.registerEventTimeTimer(ctx.timestamp + value.n);
        ctx.timerService.registerEventTimeTimer(ctx.timestamp + value.n); // deduplicated
      },
      onTimer(timestamp, ctx, out) {
        out.collect(`${ctx.currentKey}@${timestamp}/${ctx.timeDomain}/${ctx.timestamp}`);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('timers', byKey, fn));
    await h.processElements([ev('a', 30), ev('b', 10), ev('c', 100)], [0, 0, 0]);
    expect(h.timers?.eventTimerCount()).toBe(3);
    await h.processWatermark(30);
    expect(h.output.records()).toEqual([
      { value: 'b@10/event/10', timestamp: 10 },
      { value: 'a@30/event/30', timestamp: 30 },
    ]);
    expect(h.output.events.map((e) => e.kind)).toEqual(['batch', 'watermark']);
    expect(h.output.watermarks).toEqual([30]);
    await h.processWatermark(99);
    expect(h.output.events.map((e) => e.kind)).toEqual(['batch', 'watermark', 'watermark']);
    await h.finish();
    expect(h.output.values().at(-1)).toBe('c@100/event/100');
    expect(h.output.watermarks).toEqual([30, 99, MAX_WATERMARK]);
  });

  it('deletes timers of the current key only', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(value, ctx) {
        if (value.n > 0) ctx.timerService.registerEventTimeTimer(10);
        else ctx.timerService.deleteEventTimeTimer(10);
      },
      onTimer(_ts, ctx, out) {
        out.collect(ctx.currentKey);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('del', byKey, fn));
    await h.processElements([ev('a', 1), ev('b', 1), ev('a', 0)]);
    await h.processWatermark(10);
    expect(h.output.values()).toEqual(['b']);
  });

  it('fires timers registered from onTimer that are already due in the same watermark', async () => {
    const fn: KeyedProcessFunction<string, Event, number> = {
      processElement(_v, ctx) {
        ctx.timerService.registerEventTimeTimer(1);
      },
      onTimer(timestamp, ctx, out) {
        out.collect(timestamp);
        if (timestamp < 4) ctx.timerService.registerEventTimeTimer(timestamp + 1);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('chain', byKey, fn));
    await h.processElement(ev('a'), 0);
    await h.processWatermark(3);
    expect(h.output.values()).toEqual([1, 2, 3]);
    expect(h.timers?.nextEventTime()).toBe(4);
  });

  it('fails instead of hanging when a periodic timer keeps re-registering under the final watermark', async () => {
    const fn: KeyedProcessFunction<string, Event, number> = {
      processElement(_v, ctx) {
        ctx.timerService.registerEventTimeTimer(1000);
      },
      onTimer(timestamp, ctx) {
        ctx.timerService.registerEventTimeTimer(timestamp + 1000);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('periodic', byKey, fn));
    await h.processElement(ev('a'), 0);
    await h.processWatermark(10_000);
    await expect(h.processWatermark(MAX_WATERMARK)).rejects.toThrow(/final watermark/);
  });

  it('fires processing-time timers on wake-ups, with no event timestamp, and asks for the next wake-up', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(value, ctx) {
        ctx.timerService.registerProcessingTimeTimer(ctx.timerService.currentProcessingTime() + value.n);
      },
      onTimer(timestamp, ctx, out) {
        out.collect(`${ctx.currentKey}@${timestamp}/${ctx.timeDomain}/${ctx.currentProcessingTime()}`);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('proc', byKey, fn), { processingTime: 1000 });
    await h.processElements([ev('a', 500), ev('b', 100), ev('c', 100)], [1, 2, 3]);
    // 'a' asked for 1500 first, then 'b' for the earlier 1100.
    expect(h.pendingWakeups()).toEqual([1100, 1500]);
    await h.setProcessingTime(1099);
    expect(h.output.records()).toEqual([]);
    await h.setProcessingTime(1200);
    expect(h.output.records()).toEqual([
      { value: 'b@1100/processing/1200', timestamp: NO_TIMESTAMP },
      { value: 'c@1100/processing/1200', timestamp: NO_TIMESTAMP },
    ]);
    expect(h.pendingWakeups()).toEqual([1500]);
    // Event-time watermarks do not fire processing-time timers.
    await h.processWatermark(MAX_WATERMARK);
    expect(h.output.batches).toHaveLength(1);
    await h.setProcessingTime(1500);
    expect(h.output.values().at(-1)).toBe('a@1500/processing/1500');
    expect(h.pendingWakeups()).toEqual([]);
  });

  it('does not fire processing-time timers at the end of input', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(_v, ctx) {
        ctx.timerService.registerProcessingTimeTimer(10_000);
      },
      onTimer(_ts, _ctx, out) {
        out.collect('fired');
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('end', byKey, fn));
    await h.processElement(ev('a'), 0);
    await h.finish();
    await h.close();
    expect(h.output.values()).toEqual([]);
    expect(h.timers?.processingTimerCount()).toBe(1);
  });

  it('emits side outputs as batches with the element timestamp', async () => {
    const odd = new OutputTag<number>('odd');
    const fn: KeyedProcessFunction<string, Event, number> = {
      processElement(value, ctx, out) {
        if (value.n % 2 === 1) ctx.output(odd, value.n);
        else out.collect(value.n);
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('side', byKey, fn));
    await h.processElements([ev('a', 1), ev('a', 2), ev('b', 3)], [10, 20, 30]);
    expect(h.output.values()).toEqual([2]);
    expect(h.output.sideRecords(odd)).toEqual([
      { value: 1, timestamp: 10 },
      { value: 3, timestamp: 30 },
    ]);
    expect(h.output.sideBatches.get('odd')).toHaveLength(1);
    expect(h.output.events.map((e) => e.kind)).toEqual(['batch', 'side']);
  });

  it('wraps a throw from processElement with the operator, subtask and record origin', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(value, _ctx, out) {
        out.collect('before');
        if (value.n < 0) throw new Error('negative');
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('boom', byKey, fn), { subtask: 0 });
    const error = await h
      .processBatch(batchOf([ev('a', 1), ev('b', -1)], [1, 2], 'file-3', [40, 41]))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error).toMatchObject({ operator: 'boom', subtask: 0, origin: { split: 'file-3', offset: 41 } });
    expect((error as Error).message).toContain('negative');
    expect(h.output.batches).toEqual([]);
  });

  it('wraps a throw from onTimer without an origin', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement(_v, ctx) {
        ctx.timerService.registerEventTimeTimer(5);
      },
      onTimer() {
        throw new Error('timer failed');
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('t', byKey, fn));
    await h.processElement(ev('a'), 0);
    const error = await h.processWatermark(5).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect((error as UserFunctionError).origin).toBeUndefined();
    expect(h.output.watermarks).toEqual([]);
  });

  it('rejects keys that are not strings or finite numbers, and a throwing key selector', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = { processElement() {} };
    const bad = await OperatorTestHarness.open(new KeyedProcessOperator('k', () => undefined as unknown as string, fn));
    await expect(bad.processElement(ev('a'))).rejects.toThrow(/key selector returned undefined/);
    const throwing = await OperatorTestHarness.open(
      new KeyedProcessOperator(
        'k',
        () => {
          throw new Error('no key');
        },
        fn,
      ),
    );
    await expect(throwing.processElement(ev('a'))).rejects.toBeInstanceOf(UserFunctionError);
  });

  it('signals a partitioning bug when a key is outside the subtask key-group range', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = { processElement() {} };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('k', byKey, fn), {
      keyGroupRange: { start: 0, end: 0 },
    });
    const keys = Array.from({ length: 20 }, (_, i) => ev(`key${i}`));
    await expect(h.processElements(keys)).rejects.toBeInstanceOf(InternalError);
  });

  it('requires keyed state and timers', async () => {
    const fn: KeyedProcessFunction<string, Event, string> = { processElement() {} };
    await expect(OperatorTestHarness.open(new KeyedProcessOperator('k', byKey, fn), { keyed: false })).rejects.toThrow(
      InternalError,
    );
  });

  it('restores state and timers, and asks for a wake-up for restored processing-time timers', async () => {
    const fn = (): KeyedProcessFunction<string, Event, string> => {
      const inner = runningSum();
      return {
        open: inner.open,
        processElement(value, ctx, out) {
          inner.processElement(value, ctx, out);
          ctx.timerService.registerEventTimeTimer(100);
          ctx.timerService.registerProcessingTimeTimer(5000);
        },
        onTimer(timestamp, ctx, out) {
          out.collect(`${ctx.currentKey}@${timestamp}`);
        },
      };
    };
    const first = await OperatorTestHarness.open(new KeyedProcessOperator('r', byKey, fn()));
    await first.processElements([ev('a', 1), ev('b', 2), ev('a', 3)], [1, 2, 3]);
    const snapshot = first.snapshot();

    const second = await OperatorTestHarness.open(new KeyedProcessOperator('r', byKey, fn()), { restoreFrom: snapshot });
    expect(second.pendingWakeups()).toEqual([5000]);
    await second.processElement(ev('a', 10), 4);
    expect(second.output.values()).toEqual(['a:14']);
    await second.processWatermark(100);
    // Within one timestamp, restored timers fire in key-group order.
    expect(second.output.values().slice(1).sort()).toEqual(['a@100', 'b@100']);
    await second.setProcessingTime(5000);
    expect(second.output.values().slice(3).sort()).toEqual(['a@5000', 'b@5000']);
    expect(second.pendingWakeups()).toEqual([]);
  });

  it('calls close on the function', async () => {
    let closed = 0;
    const fn: KeyedProcessFunction<string, Event, string> = {
      processElement() {},
      close() {
        closed++;
      },
    };
    const h = await OperatorTestHarness.open(new KeyedProcessOperator('c', byKey, fn));
    await h.close();
    expect(closed).toBe(1);
  });
});
