import { describe, expect, it } from 'vitest';
import { batchOf, ConfigError, NO_TIMESTAMP, OutputTag, UserFunctionError } from '../../../../lib/core/index.ts';
import type { ProcessWindowJoinFunction } from '../../../../lib/contracts/join-functions.ts';
import {
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  type WindowAssigner,
} from '../../../../lib/operators/windows/assigners.ts';
import { windowJoinOfPairs } from '../../../../lib/operators/joins/join-function-adapters.ts';
import { createWindowJoinOperator } from '../../../../lib/operators/joins/window-join-operator.ts';
import { OperatorTestHarness, type HarnessSnapshot } from '../../../harness/operator-test-context.ts';

interface Order {
  user: string;
  order: number;
}
interface Click {
  user: string;
  page: string;
}

const pairs = windowJoinOfPairs<Order, Click, string, string>((o, c) => `${o.user}:${o.order}/${c.page}`);

async function open(
  assigner: WindowAssigner,
  options: {
    lateness?: number;
    fn?: ProcessWindowJoinFunction<Order, Click, string, string>;
    restoreFrom?: HarnessSnapshot;
    processingTime?: number;
    tags?: boolean;
  } = {},
) {
  const operator = createWindowJoinOperator<Order, Click, string, string>({
    name: 'orders-clicks',
    keySelector1: (o) => o.user,
    keySelector2: (c) => c.user,
    assigner,
    allowedLatenessMs: options.lateness ?? 0,
    leftLateDataTag: options.tags === true ? lateOrders : undefined,
    rightLateDataTag: options.tags === true ? lateClicks : undefined,
    fn: options.fn ?? pairs,
  });
  const h = await OperatorTestHarness.open<Order | Click, string>(operator, {
    restoreFrom: options.restoreFrom,
    processingTime: options.processingTime,
  });
  return { operator, h };
}

const lateOrders = new OutputTag<Order>('late-orders');
const lateClicks = new OutputTag<Click>('late-clicks');

const orders = (h: OperatorTestHarness<Order | Click, string>, items: [string, number, number][]) =>
  h.processElements(
    items.map(([user, order]) => ({ user, order })),
    items.map(([, , ts]) => ts),
    0,
  );
const clicks = (h: OperatorTestHarness<Order | Click, string>, items: [string, string, number][]) =>
  h.processElements(
    items.map(([user, page]) => ({ user, page })),
    items.map(([, , ts]) => ts),
    1,
  );

describe('window join', () => {
  it('joins both inputs per key in tumbling windows when the watermark reaches the window end', async () => {
    const { h } = await open(TumblingEventTimeWindows.of(10));
    await orders(h, [
      ['u1', 1, 1],
      ['u1', 2, 8],
      ['u2', 3, 4],
      ['u1', 4, 12],
    ]);
    await clicks(h, [
      ['u1', 'home', 3],
      ['u2', 'cart', 15],
      ['u1', 'shop', 9],
    ]);
    await h.processWatermark(8);
    expect(h.output.records()).toEqual([]);
    await h.processWatermark(9);
    // u2 has an order in [0, 10) but its click is in [10, 20); u1's order 4 has no click in [10, 20).
    expect(h.output.records().map((r) => [r.value, r.timestamp])).toEqual([
      ['u1:1/home', 9],
      ['u1:1/shop', 9],
      ['u1:2/home', 9],
      ['u1:2/shop', 9],
    ]);
    expect(h.output.watermarks).toEqual([8, 9]);
    await h.processWatermark(100);
    expect(h.output.records()).toHaveLength(4);
    expect(h.backend?.entryCount()).toBe(0);
  });

  it('joins each pair once per sliding window that holds both', async () => {
    const { h } = await open(SlidingEventTimeWindows.of(10, 5));
    await orders(h, [['u', 1, 7]]);
    await clicks(h, [['u', 'a', 9]]);
    await h.finish();
    // Both lie in [0, 10) and [5, 15).
    expect(h.output.records().map((r) => [r.value, r.timestamp])).toEqual([
      ['u:1/a', 9],
      ['u:1/a', 14],
    ]);
  });

  it('merges sessions across both inputs and hands the process function the whole session', async () => {
    const seen: string[] = [];
    const fn: ProcessWindowJoinFunction<Order, Click, string, string> = {
      process(key, ctx, os, cs, out) {
        seen.push(`${key} [${ctx.window.start},${ctx.window.end}) ${os.map((o) => o.order).join(',')} ${cs.map((c) => c.page).join(',')}`);
        out.collect(key);
      },
    };
    const { h } = await open(EventTimeSessionWindows.withGap(5), { fn });
    await orders(h, [['u', 1, 0]]);
    await clicks(h, [['u', 'x', 12]]);
    // Separate sessions [0, 5) and [12, 17): an order at 8 extends the second to [8, 17), a click at 4 bridges both.
    await orders(h, [['u', 2, 8]]);
    await clicks(h, [['u', 'y', 4]]);
    await h.finish();
    expect(seen).toEqual(['u [0,17) 1,2 x,y']);
    expect(h.output.records()).toEqual([{ value: 'u', timestamp: 16 }]);
  });

  it('re-fires the whole join for a record within allowed lateness and routes later records per input', async () => {
    const { h, operator } = await open(TumblingEventTimeWindows.of(10), { lateness: 5, tags: true });
    await orders(h, [['u', 1, 2]]);
    await clicks(h, [['u', 'a', 3]]);
    await h.processWatermark(9);
    expect(h.output.values()).toEqual(['u:1/a']);
    await clicks(h, [['u', 'b', 4]]);
    expect(h.output.values()).toEqual(['u:1/a', 'u:1/a', 'u:1/b']);
    await h.processWatermark(14);
    expect(h.backend?.entryCount()).toBe(0);
    await orders(h, [['u', 9, 5]]);
    await clicks(h, [['u', 'c', 6]]);
    expect(h.output.sideValues(lateOrders)).toEqual([{ user: 'u', order: 9 }]);
    expect(h.output.sideRecords(lateClicks)).toEqual([{ value: { user: 'u', page: 'c' }, timestamp: 6 }]);
    expect(operator.droppedLateRecords).toBe(0);
  });

  it('drops and counts late records without tags', async () => {
    const { h, operator } = await open(TumblingEventTimeWindows.of(10));
    await h.processWatermark(20);
    await orders(h, [['u', 1, 5]]);
    await clicks(h, [['u', 'a', 19]]);
    expect(operator.droppedLateRecords).toBe(2);
    expect(h.output.sideBatches.size).toBe(0);
  });

  it('keeps open windows of both inputs in snapshots', async () => {
    const first = await open(TumblingEventTimeWindows.of(10));
    await orders(first.h, [['u', 1, 1]]);
    await clicks(first.h, [['u', 'a', 2]]);
    const snapshot = first.h.snapshot();
    const second = await open(TumblingEventTimeWindows.of(10), { restoreFrom: snapshot });
    await clicks(second.h, [['u', 'b', 3]]);
    await second.h.processWatermark(9);
    expect(second.h.output.values()).toEqual(['u:1/a', 'u:1/b']);
  });

  it('joins in processing-time windows by arrival time, and fires what is left at the end of input', async () => {
    const { h } = await open(TumblingProcessingTimeWindows.of(100), { processingTime: 10 });
    await h.processBatch(batchOf<Order | Click>([{ user: 'u', order: 1 }], [NO_TIMESTAMP]), 0);
    await h.setProcessingTime(50);
    await h.processBatch(batchOf<Order | Click>([{ user: 'u', page: 'a' }], [NO_TIMESTAMP]), 1);
    await h.setProcessingTime(99);
    expect(h.output.records()).toEqual([{ value: 'u:1/a', timestamp: 99 }]);
    await h.processBatch(batchOf<Order | Click>([{ user: 'u', order: 2 }], [NO_TIMESTAMP]), 0);
    await h.processBatch(batchOf<Order | Click>([{ user: 'u', page: 'b' }], [NO_TIMESTAMP]), 1);
    await h.endInput();
    expect(h.output.values()).toEqual(['u:1/a', 'u:2/b']);
  });

  it('rejects records without timestamps in event time, failing keys and throwing functions with typed errors', async () => {
    const { h } = await open(TumblingEventTimeWindows.of(10));
    await expect(h.processElement({ user: 'u', order: 1 }, NO_TIMESTAMP, 0)).rejects.toBeInstanceOf(ConfigError);

    const bad = await open(TumblingEventTimeWindows.of(10));
    const batch = { values: [{ user: undefined as unknown as string, order: 1 }], timestamps: [1], split: 's', offsets: [7] };
    const err = await bad.h.processBatch(batch, 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserFunctionError);
    expect((err as UserFunctionError).origin).toEqual({ split: 's', offset: 7 });

    const throwing = await open(TumblingEventTimeWindows.of(10), {
      fn: {
        process() {
          throw new Error('boom');
        },
      },
    });
    await orders(throwing.h, [['u', 1, 1]]);
    await clicks(throwing.h, [['u', 'a', 1]]);
    await expect(throwing.h.processWatermark(9)).rejects.toBeInstanceOf(UserFunctionError);
    expect(throwing.h.output.records()).toEqual([]);
  });

  it('refuses allowed lateness on processing-time windows and negative lateness', () => {
    const spec = {
      name: 'j',
      keySelector1: (o: Order) => o.user,
      keySelector2: (c: Click) => c.user,
      fn: pairs,
    };
    expect(() => createWindowJoinOperator({ ...spec, assigner: TumblingProcessingTimeWindows.of(10), allowedLatenessMs: 5 })).toThrow(
      ConfigError,
    );
    expect(() => createWindowJoinOperator({ ...spec, assigner: TumblingEventTimeWindows.of(10), allowedLatenessMs: -1 })).toThrow(
      ConfigError,
    );
  });
});
