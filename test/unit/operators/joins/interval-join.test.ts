import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  keyGroupOf,
  keyGroupRangeContains,
  keyGroupRangeForSubtask,
  NO_TIMESTAMP,
  OutputTag,
  UserFunctionError,
} from '../../../../lib/core/index.ts';
import type { ProcessJoinFunction } from '../../../../lib/contracts/join-functions.ts';
import { valueState, type ValueState } from '../../../../lib/state/index.ts';
import { IntervalJoinOperator } from '../../../../lib/operators/joins/interval-join-operator.ts';
import { processJoinOfPairs } from '../../../../lib/operators/joins/join-function-adapters.ts';
import { OperatorTestHarness, type HarnessSnapshot, type OperatorTestOptions } from '../../../harness/operator-test-context.ts';

interface Ev {
  k: string;
  n: number;
}

const render = processJoinOfPairs<Ev, Ev, string, string>((l, r) => `${l.k}:${l.n}-${r.n}`);

async function open(
  lower: number,
  upper: number,
  fn: ProcessJoinFunction<Ev, Ev, string, string> = render,
  options: OperatorTestOptions = {},
) {
  const operator = new IntervalJoinOperator<Ev, Ev, string, string>({
    name: 'ij',
    keySelector1: (e) => e.k,
    keySelector2: (e) => e.k,
    lowerBoundMs: lower,
    upperBoundMs: upper,
    fn,
  });
  const h = await OperatorTestHarness.open<Ev, string>(operator, options);
  return { operator, h };
}

const send = (h: OperatorTestHarness<Ev, string>, input: 0 | 1, items: [string, number, number][]) =>
  h.processElements(
    items.map(([k, n]) => ({ k, n })),
    items.map(([, , ts]) => ts),
    input,
  );

describe('interval join', () => {
  it('emits pairs with r.ts in [l.ts + lower, l.ts + upper] as soon as the second arrives, with the larger timestamp', async () => {
    // Flink's documentation example: between(-2, 1).
    const { h } = await open(-2, 1);
    await send(h, 0, [
      ['k', 0, 0],
      ['k', 2, 2],
      ['k', 3, 3],
    ]);
    await send(h, 1, [
      ['k', 0, 0],
      ['k', 1, 1],
      ['k', 6, 6],
    ]);
    expect(h.output.records()).toEqual([
      { value: 'k:0-0', timestamp: 0 },
      { value: 'k:2-0', timestamp: 2 },
      { value: 'k:0-1', timestamp: 1 },
      { value: 'k:2-1', timestamp: 2 },
      { value: 'k:3-1', timestamp: 3 },
    ]);
    await send(h, 0, [
      ['k', 5, 5],
      ['other', 5, 5],
    ]);
    expect(h.output.values().slice(5)).toEqual(['k:5-6']);
  });

  it('gives the function both timestamps, the key, side outputs and keyed state', async () => {
    const side = new OutputTag<string>('side');
    const fn: ProcessJoinFunction<Ev, Ev, string, string> = {
      open(ctx) {
        (this as { count?: ValueState<number> }).count = ctx.getState(valueState<number>('pairs'));
      },
      processElement(l, r, ctx, out) {
        const count = (this as unknown as { count: ValueState<number> }).count;
        count.update((count.value() ?? 0) + 1);
        out.collect(`${ctx.currentKey} ${ctx.leftTimestamp} ${ctx.rightTimestamp} #${count.value()}`);
        ctx.output(side, `${l.n}+${r.n}@${ctx.timestamp}`);
      },
    };
    const { h } = await open(0, 10, Object.create(fn) as typeof fn);
    await send(h, 0, [['a', 1, 5]]);
    await send(h, 1, [
      ['a', 2, 7],
      ['a', 3, 15],
    ]);
    expect(h.output.records()).toEqual([
      { value: 'a 5 7 #1', timestamp: 7 },
      { value: 'a 5 15 #2', timestamp: 15 },
    ]);
    expect(h.output.sideRecords(side)).toEqual([
      { value: '1+2@7', timestamp: 7 },
      { value: '1+3@15', timestamp: 15 },
    ]);
  });

  it('drops buffered records once no future record can match them', async () => {
    const { h } = await open(-5, 10);
    await send(h, 0, [['a', 1, 100]]);
    await send(h, 1, [['a', 1, 100]]);
    expect(h.timers?.eventTimerCount()).toBe(2);
    // Left 100 waits for rights up to 110; right 100 for lefts up to 105.
    await h.processWatermark(104);
    expect(h.timers?.eventTimerCount()).toBe(2);
    await h.processWatermark(105);
    expect(h.timers?.eventTimerCount()).toBe(1);
    await send(h, 1, [['a', 2, 110]]);
    expect(h.output.values()).toEqual(['a:1-1', 'a:1-2']);
    await h.processWatermark(110);
    // Only the right record at 110 is left (it waits for lefts up to 115).
    expect(h.timers?.eventTimerCount()).toBe(1);
    await h.processWatermark(115);
    expect(h.backend?.entryCount()).toBe(0);
  });

  it('treats records at or below the watermark as late', async () => {
    const leftLate = new OutputTag<Ev>('left-late');
    const operator = new IntervalJoinOperator<Ev, Ev, string, string>({
      name: 'ij',
      keySelector1: (e) => e.k,
      keySelector2: (e) => e.k,
      lowerBoundMs: 0,
      upperBoundMs: 10,
      leftLateDataTag: leftLate,
      fn: render,
    });
    const h = await OperatorTestHarness.open<Ev, string>(operator);
    await h.processWatermark(50);
    await send(h, 0, [
      ['a', 1, 50],
      ['a', 2, 51],
    ]);
    await send(h, 1, [['a', 3, 50]]);
    expect(h.output.sideRecords(leftLate)).toEqual([{ value: { k: 'a', n: 1 }, timestamp: 50 }]);
    expect(operator.droppedLateRecords).toBe(1);
    expect(h.output.values()).toEqual([]);
  });

  it('restores buffers and cleanup timers into the subtask that owns each key after rescaling', async () => {
    const { h } = await open(0, 100);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    await send(
      h,
      0,
      keys.map((k, i) => [k, i, 10]),
    );
    const snapshot: HarnessSnapshot = h.snapshot();
    const matched: string[] = [];
    for (let subtask = 0; subtask < 2; subtask++) {
      const range = keyGroupRangeForSubtask(subtask, 2, 128);
      const mine = keys.filter((k) => keyGroupRangeContains(range, keyGroupOf(k, 128)));
      expect(mine.length).toBeGreaterThan(0);
      const restored = await open(0, 100, render, { subtask, parallelism: 2, restoreFrom: snapshot });
      expect(restored.h.timers?.eventTimerCount()).toBe(mine.length);
      await send(
        restored.h,
        1,
        mine.map((k) => [k, 99, 20]),
      );
      matched.push(...restored.h.output.values());
      // The rights (cleanup at 20) are gone; each left (cleanup at 110) is a records list and a bucket index.
      await restored.h.processWatermark(109);
      expect(restored.h.backend?.entryCount()).toBe(mine.length * 2);
      await restored.h.processWatermark(110);
      expect(restored.h.backend?.entryCount()).toBe(0);
    }
    expect(matched.sort()).toEqual(keys.map((k, i) => `${k}:${i}-99`));
  });

  it('fails with typed errors: missing timestamps, bad keys, a throwing function, inverted bounds', async () => {
    const { h } = await open(0, 1);
    await expect(h.processElement({ k: 'a', n: 1 }, NO_TIMESTAMP, 1)).rejects.toBeInstanceOf(ConfigError);
    await expect(h.processElement({ k: null as unknown as string, n: 1 }, 5, 0)).rejects.toBeInstanceOf(UserFunctionError);

    const throwing = await open(0, 1, {
      processElement() {
        throw new Error('boom');
      },
    });
    await send(throwing.h, 0, [['a', 1, 1]]);
    await expect(send(throwing.h, 1, [['a', 1, 1]])).rejects.toThrow(/boom/);
    expect(throwing.h.output.records()).toEqual([]);

    expect(() => new IntervalJoinOperator({ name: 'x', keySelector1: String, keySelector2: String, lowerBoundMs: 2, upperBoundMs: 1, fn: render })).toThrow(
      ConfigError,
    );
    expect(() => new IntervalJoinOperator({ name: 'x', keySelector1: String, keySelector2: String, lowerBoundMs: 0.5, upperBoundMs: 1, fn: render })).toThrow(
      ConfigError,
    );
  });
});
