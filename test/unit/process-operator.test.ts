import { describe, expect, it } from 'vitest';
import { batchOf, OutputTag, UserFunctionError } from '../../lib/core/index.ts';
import type { CoProcessFunction, ProcessFunction, RuntimeContext } from '../../lib/contracts/functions.ts';
import { CoProcessOperator } from '../../lib/operators/process/co-process-operator.ts';
import { ProcessOperator } from '../../lib/operators/process/process-operator.ts';
import { OperatorTestHarness } from '../harness/operator-test-context.ts';

describe('ProcessOperator', () => {
  it('emits collected records with the input timestamps and side outputs, one batch per input batch', async () => {
    const rejected = new OutputTag<number>('rejected');
    const fn: ProcessFunction<number, string> = {
      processElement(value, ctx, out) {
        if (value < 0) {
          ctx.output(rejected, value);
          return;
        }
        out.collect(`${value}`);
        out.collect(`${value}!`);
      },
    };
    const h = await OperatorTestHarness.open(new ProcessOperator('p', fn), { keyed: false });
    await h.processElements([1, -2, 3], [10, 20, 30]);
    expect(h.output.batches).toHaveLength(1);
    expect(h.output.records()).toEqual([
      { value: '1', timestamp: 10 },
      { value: '1!', timestamp: 10 },
      { value: '3', timestamp: 30 },
      { value: '3!', timestamp: 30 },
    ]);
    expect(h.output.sideRecords(rejected)).toEqual([{ value: -2, timestamp: 20 }]);
    await h.processElements([-1], [40]);
    expect(h.output.batches).toHaveLength(1);
    expect(h.output.sideBatches.get('rejected')).toHaveLength(2);
  });

  it('tracks and forwards watermarks and shows processing time', async () => {
    const seen: number[][] = [];
    const fn: ProcessFunction<number, never> = {
      processElement(_v, ctx) {
        seen.push([ctx.timestamp, ctx.currentWatermark(), ctx.currentProcessingTime()]);
      },
    };
    const h = await OperatorTestHarness.open(new ProcessOperator('p', fn), { keyed: false, processingTime: 3 });
    await h.processWatermark(15);
    await h.processElement(1, 20);
    expect(seen).toEqual([[20, 15, 3]]);
    expect(h.output.watermarks).toEqual([15]);
  });

  it('opens and closes the function with a runtime context', async () => {
    const calls: unknown[] = [];
    const fn: ProcessFunction<number, number> = {
      open(ctx: RuntimeContext) {
        calls.push(ctx);
      },
      processElement() {},
      close() {
        calls.push('closed');
      },
    };
    const h = await OperatorTestHarness.open(new ProcessOperator('lifecycle', fn), {
      keyed: false,
      subtask: 2,
      parallelism: 4,
    });
    await h.close();
    expect(calls).toEqual([{ operatorName: 'lifecycle', subtask: 2, parallelism: 4 }, 'closed']);
  });

  it('wraps user errors with the record origin', async () => {
    const fn: ProcessFunction<number, number> = {
      processElement(value) {
        if (value === 2) throw new Error('two');
      },
    };
    const h = await OperatorTestHarness.open(new ProcessOperator('p', fn), { keyed: false, subtask: 0 });
    const error = await h.processBatch(batchOf([1, 2], [0, 0], 's', [100, 101])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error).toMatchObject({ operator: 'p', origin: { split: 's', offset: 101 } });
  });
});

describe('CoProcessOperator', () => {
  it('routes input 0 to processElement1 and input 1 to processElement2', async () => {
    const fn: CoProcessFunction<number, string, string> = {
      processElement1(value, ctx, out) {
        out.collect(`left ${value} @${ctx.timestamp}`);
      },
      processElement2(value, ctx, out) {
        out.collect(`right ${value} @${ctx.timestamp}`);
      },
    };
    const h = await OperatorTestHarness.open<number | string, string>(new CoProcessOperator('co', fn), { keyed: false });
    await h.processElements([1, 2], [5, 6], 0);
    await h.processElements(['x'], [7], 1);
    expect(h.output.values()).toEqual(['left 1 @5', 'left 2 @6', 'right x @7']);
    expect(h.output.batches).toHaveLength(2);
  });
});
