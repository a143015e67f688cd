import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchOf, NO_TIMESTAMP, OutputTag } from '../../../lib/core/index.ts';
import {
  EventTimeSessionWindows,
  ProcessingTimeSessionWindows,
  SlidingEventTimeWindows,
  SlidingProcessingTimeWindows,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  type WindowAssigner,
} from '../../../lib/operators/windows/assigners.ts';
import { createWindowOperator } from '../../../lib/operators/windows/window-operator.ts';
import { OperatorTestHarness } from '../../harness/operator-test-context.ts';
import { firingsByKey, runWindowModel, type ModelAssigner, type ModelBatch } from '../../harness/window-model.ts';
import { expectedValue, windowFunction, type Ev, type FnKind, type Out } from './window-functions.ts';

const lateTag = new OutputTag<Ev>('late');

function assignerFor(model: ModelAssigner, eventTime: boolean): WindowAssigner {
  switch (model.kind) {
    case 'tumbling':
      return eventTime
        ? TumblingEventTimeWindows.of(model.size, model.offset)
        : TumblingProcessingTimeWindows.of(model.size, model.offset);
    case 'sliding':
      return eventTime
        ? SlidingEventTimeWindows.of(model.size, model.slide, model.offset)
        : SlidingProcessingTimeWindows.of(model.size, model.slide, model.offset);
    case 'session':
      return eventTime ? EventTimeSessionWindows.withGap(model.gap) : ProcessingTimeSessionWindows.withGap(model.gap);
  }
}

const assignerArb: fc.Arbitrary<ModelAssigner> = fc.oneof(
  fc
    .integer({ min: 1, max: 25 })
    .chain((size) =>
      fc.record({
        kind: fc.constant('tumbling' as const),
        size: fc.constant(size),
        offset: fc.integer({ min: -(size - 1), max: size - 1 }),
      }),
    ),
  fc
    .record({ slide: fc.integer({ min: 1, max: 12 }), extra: fc.integer({ min: 0, max: 20 }) })
    .chain(({ slide, extra }) =>
      fc.record({
        kind: fc.constant('sliding' as const),
        size: fc.constant(slide + extra),
        slide: fc.constant(slide),
        offset: fc.integer({ min: -(slide - 1), max: slide - 1 }),
      }),
    ),
  fc.record({ kind: fc.constant('session' as const), gap: fc.integer({ min: 1, max: 15 }) }),
);

const fnKindArb = fc.constantFrom<FnKind>('reduce', 'aggregate', 'process');

interface RawEvent {
  key: string;
  v: number;
  ts: number;
}

const batchesArb = fc.array(
  fc.record({
    events: fc.array(
      fc.record({
        key: fc.constantFrom('a', 'b', 'c'),
        v: fc.integer({ min: 0, max: 50 }),
        ts: fc.integer({ min: -40, max: 160 }),
      }),
      { maxLength: 8 },
    ),
    // How far the watermark trails the largest timestamp seen; null: no watermark after this batch.
    lag: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }),
  }),
  { minLength: 1, maxLength: 14 },
);

/** Turns generated events into batches with ids and a non-decreasing watermark; the last is +Infinity. */
function toBatches(raw: { events: RawEvent[]; lag: number | null }[]): ModelBatch<Ev>[] {
  let id = 0;
  let maxTs = Number.NEGATIVE_INFINITY;
  let watermark = Number.NEGATIVE_INFINITY;
  return raw.map((b, index) => {
    const values = b.events.map((e) => ({ key: e.key, v: e.v, id: id++ }));
    const timestamps = b.events.map((e) => e.ts);
    for (const ts of timestamps) maxTs = Math.max(maxTs, ts);
    if (b.lag !== null) watermark = Math.max(watermark, maxTs - b.lag);
    if (index === raw.length - 1) watermark = Number.POSITIVE_INFINITY;
    return { values, timestamps, watermark };
  });
}

function groupOutput(records: { value: Out; timestamp: number }[]): Map<string, Out[]> {
  const byKey = new Map<string, Out[]>();
  for (const { value, timestamp } of records) {
    expect(timestamp).toBe(value.end - 1);
    const list = byKey.get(value.key) ?? [];
    list.push(value);
    byKey.set(value.key, list);
  }
  return byKey;
}

function expectedOutput(firings: ReturnType<typeof runWindowModel<Ev>>['firings'], kind: FnKind): Map<string, Out[]> {
  const byKey = new Map<string, Out[]>();
  for (const [key, list] of firingsByKey(firings)) {
    byKey.set(
      key as string,
      list.map((f) => ({ key: key as string, start: f.window.start, end: f.window.end, value: expectedValue(kind, f.elements) })),
    );
  }
  return byKey;
}

describe('window operator vs. brute-force model (event time)', () => {
  it('emits the same results per key and the same late data, for every window kind and function', async () => {
    await fc.assert(
      fc.asyncProperty(
        assignerArb,
        fnKindArb,
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 30 })),
        fc.boolean(),
        batchesArb,
        async (modelAssigner, kind, lateness, withTag, raw) => {
          const batches = toBatches(raw);
          const model = runWindowModel({
            assigner: modelAssigner,
            allowedLateness: lateness,
            keySelector: (e: Ev) => e.key,
            batches,
          });
          const operator = createWindowOperator<Ev, string, Out>({
            name: 'window',
            keySelector: (e) => e.key,
            assigner: assignerFor(modelAssigner, true),
            allowedLatenessMs: lateness,
            lateDataTag: withTag ? lateTag : undefined,
            fn: windowFunction(kind),
          });
          const h = await OperatorTestHarness.open(operator);
          for (const b of batches) {
            await h.processBatch(batchOf(b.values.slice(), b.timestamps.slice()));
            if (b.watermark > h.currentWatermark) await h.processWatermark(b.watermark);
          }
          await h.endInput();

          expect(groupOutput(h.output.records())).toEqual(expectedOutput(model.firings, kind));
          if (withTag) {
            expect(h.output.sideRecords(lateTag)).toEqual(model.late);
            expect(operator.droppedLateRecords).toBe(0);
          } else {
            expect(h.output.sideBatches.size).toBe(0);
            expect(operator.droppedLateRecords).toBe(model.late.length);
          }
          // The final watermark fires and purges everything.
          expect(h.backend?.entryCount()).toBe(0);
          expect(h.timers?.eventTimerCount()).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('window operator vs. brute-force model (processing time)', () => {
  // Processing-time windows behave as event-time windows whose timestamps are the arrival times and whose
  // watermark is the clock at wake-ups, as long as every batch arrives after the previous wake-up.
  it('matches the event-time model run on arrival times', async () => {
    await fc.assert(
      fc.asyncProperty(
        assignerArb,
        fnKindArb,
        fc.array(
          fc.record({
            events: fc.array(fc.record({ key: fc.constantFrom('a', 'b'), v: fc.integer({ min: 0, max: 50 }) }), {
              maxLength: 6,
            }),
            arriveAfter: fc.integer({ min: 1, max: 15 }),
            wakeAfter: fc.integer({ min: 0, max: 15 }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (modelAssigner, kind, raw) => {
          const operator = createWindowOperator<Ev, string, Out>({
            name: 'window',
            keySelector: (e) => e.key,
            assigner: assignerFor(modelAssigner, false),
            allowedLatenessMs: 0,
            fn: windowFunction(kind),
          });
          const h = await OperatorTestHarness.open(operator, { processingTime: -30 });
          const batches: ModelBatch<Ev>[] = [];
          let now = -30;
          let id = 0;
          for (const [index, b] of raw.entries()) {
            now += b.arriveAfter;
            h.clock.set(now);
            const arrival = now;
            const values = b.events.map((e) => ({ ...e, id: id++ }));
            await h.processBatch(batchOf(values, values.map(() => NO_TIMESTAMP)));
            now += b.wakeAfter;
            await h.setProcessingTime(now);
            const last = index === raw.length - 1;
            batches.push({ values, timestamps: values.map(() => arrival), watermark: last ? Infinity : now });
          }
          await h.finish();
          const model = runWindowModel({ assigner: modelAssigner, allowedLateness: 0, keySelector: (e: Ev) => e.key, batches });
          expect(model.late).toEqual([]);
          expect(groupOutput(h.output.records())).toEqual(expectedOutput(model.firings, kind));
          expect(h.backend?.entryCount()).toBe(0);
          expect(h.timers?.processingTimerCount()).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });
});
