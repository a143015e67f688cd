import { describe, expect, it } from 'vitest';
import { batchOf, OutputTag, UserFunctionError } from '../../lib/core/index.ts';
import type { KeyedCoProcessFunction } from '../../lib/contracts/functions.ts';
import { KeyedCoProcessOperator } from '../../lib/operators/process/keyed-co-process-operator.ts';
import { valueState, type ValueState } from '../../lib/state/index.ts';
import { OperatorTestHarness } from '../harness/operator-test-context.ts';

interface Order {
  orderId: string;
  amount: number;
}
interface Payment {
  order: string;
  paid: number;
}

/** Joins orders (input 0) with payments (input 1) by order id; unmatched orders time out via an event timer. */
function orderPaymentJoin(timedOut: OutputTag<string>): KeyedCoProcessFunction<string, Order, Payment, string> {
  let pending!: ValueState<number>;
  return {
    open(ctx) {
      pending = ctx.getState(valueState<number>('pending-amount'));
    },
    processElement1(order, ctx) {
      pending.update(order.amount);
      ctx.timerService.registerEventTimeTimer(ctx.timestamp + 100);
    },
    processElement2(payment, ctx, out) {
      const amount = pending.value();
      if (amount === undefined) return;
      out.collect(`${ctx.currentKey}: ordered ${amount}, paid ${payment.paid}`);
      pending.clear();
    },
    onTimer(timestamp, ctx) {
      if (pending.value() !== undefined) ctx.output(timedOut, `${ctx.currentKey} timed out at ${timestamp}`);
      pending.clear();
    },
  };
}

describe('KeyedCoProcessOperator', () => {
  it('routes inputs to processElement1/2 with their own key selectors and shares state and timers per key', async () => {
    const timedOut = new OutputTag<string>('timed-out');
    const op = new KeyedCoProcessOperator<string, Order, Payment, string>(
      'join',
      (o) => o.orderId,
      (p) => p.order,
      orderPaymentJoin(timedOut),
    );
    const h = await OperatorTestHarness.open<Order | Payment, string>(op);
    await h.processElements(
      [
        { orderId: 'o1', amount: 10 },
        { orderId: 'o2', amount: 20 },
      ],
      [0, 5],
      0,
    );
    await h.processElements([{ order: 'o2', paid: 20 }, { order: 'unknown', paid: 1 }], [50, 60], 1);
    expect(h.output.records()).toEqual([{ value: 'o2: ordered 20, paid 20', timestamp: 50 }]);
    await h.processWatermark(200);
    expect(h.output.sideRecords(timedOut)).toEqual([{ value: 'o1 timed out at 100', timestamp: 100 }]);
    expect(h.backend?.entryCount()).toBe(0);
    expect(h.output.watermarks).toEqual([200]);
  });

  it('names the record origin when a function of either input throws', async () => {
    const fn: KeyedCoProcessFunction<string, string, string, string> = {
      processElement1() {},
      processElement2() {
        throw new Error('second input failed');
      },
    };
    const h = await OperatorTestHarness.open<string, string>(
      new KeyedCoProcessOperator('co', (v: string) => v, (v: string) => v, fn),
    );
    await h.processBatch(batchOf(['a'], [0], 'left', [1]), 0);
    const error = await h.processBatch(batchOf(['a', 'b'], [0, 0], 'right', [7, 8]), 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error).toMatchObject({ operator: 'co', origin: { split: 'right', offset: 7 } });
  });
});
