import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputTag } from '../../../../lib/core/index.ts';
import type { ProcessWindowJoinFunction } from '../../../../lib/contracts/join-functions.ts';
import {
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  type WindowAssigner,
} from '../../../../lib/operators/windows/assigners.ts';
import { windowJoinOfPairs } from '../../../../lib/operators/joins/join-function-adapters.ts';
import { createWindowJoinOperator } from '../../../../lib/operators/joins/window-join-operator.ts';
import { OperatorTestHarness } from '../../../harness/operator-test-context.ts';
import { runWindowModel, type ModelAssigner } from '../../../harness/window-model.ts';
import { feed, joinBatchesArb, sorted, strictPrefetch, type Rec } from './join-test-data.ts';

const leftLate = new OutputTag<Rec>('left-late');
const rightLate = new OutputTag<Rec>('right-late');

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

function toAssigner(model: ModelAssigner): WindowAssigner {
  switch (model.kind) {
    case 'tumbling':
      return TumblingEventTimeWindows.of(model.size, model.offset);
    case 'sliding':
      return SlidingEventTimeWindows.of(model.size, model.slide, model.offset);
    case 'session':
      return EventTimeSessionWindows.withGap(model.gap);
  }
}

const byId = (a: Rec, b: Rec): number => a.id - b.id;

/** The process variant renders a whole window: its key, bounds and both inputs' ids. */
const renderWindow: ProcessWindowJoinFunction<Rec, Rec, string, string> = {
  process(key, ctx, firsts, seconds, out) {
    const ids = (recs: readonly Rec[]) => recs.slice().sort(byId).map((r) => r.id).join(',');
    out.collect(`${key}|[${ctx.window.start},${ctx.window.end})|${ids(firsts)}|${ids(seconds)}`);
  },
};

describe('window join vs. brute-force window model', () => {
  it('joins both inputs per key and window at every firing, for every window kind, with lateness and late data', async () => {
    await fc.assert(
      fc.asyncProperty(
        assignerArb,
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 30 })),
        fc.boolean(),
        fc.constantFrom<'apply' | 'process'>('apply', 'process'),
        fc.boolean(),
        joinBatchesArb,
        async (modelAssigner, lateness, withTags, variant, withPrefetch, batches) => {
          // The two inputs of a window join behave as one keyed stream of tagged records (Flink's coGroup).
          const model = runWindowModel({
            assigner: modelAssigner,
            allowedLateness: lateness,
            keySelector: (r: Rec) => r.key,
            batches,
          });
          const expected: string[] = [];
          for (const f of model.firings) {
            const firsts = f.elements.filter((r) => r.input === 0);
            const seconds = f.elements.filter((r) => r.input === 1);
            if (firsts.length === 0 || seconds.length === 0) continue;
            if (variant === 'process') {
              const ids = (recs: readonly Rec[]) => recs.slice().sort(byId).map((r) => r.id).join(',');
              expected.push(`${String(f.key)}|[${f.window.start},${f.window.end})|${ids(firsts)}|${ids(seconds)}@${f.timestamp}`);
            } else {
              for (const l of firsts) for (const r of seconds) expected.push(`${l.key}|${l.id}|${r.id}@${f.timestamp}`);
            }
          }

          const operator = createWindowJoinOperator<Rec, Rec, string, string>({
            name: 'window-join',
            keySelector1: (r) => r.key,
            keySelector2: (r) => r.key,
            assigner: toAssigner(modelAssigner),
            allowedLatenessMs: lateness,
            leftLateDataTag: withTags ? leftLate : undefined,
            rightLateDataTag: withTags ? rightLate : undefined,
            fn:
              variant === 'process'
                ? renderWindow
                : windowJoinOfPairs<Rec, Rec, string, string>((l, r) => `${l.key}|${l.id}|${r.id}`),
          });
          const h = await OperatorTestHarness.open<Rec, string>(operator);
          const prefetches = withPrefetch ? strictPrefetch(h) : undefined;
          await feed(h, batches);
          await h.endInput();

          expect(sorted(h.output.records().map((r) => `${r.value}@${r.timestamp}`))).toEqual(sorted(expected));
          const lateIds = (input: 0 | 1) => model.late.filter((l) => l.value.input === input).map((l) => l.value.id);
          if (withTags) {
            expect(h.output.sideValues(leftLate).map((r) => r.id)).toEqual(lateIds(0));
            expect(h.output.sideValues(rightLate).map((r) => r.id)).toEqual(lateIds(1));
            expect(operator.droppedLateRecords).toBe(0);
          } else {
            expect(h.output.sideBatches.size).toBe(0);
            expect(operator.droppedLateRecords).toBe(model.late.length);
          }
          // The final watermark fires and purges everything.
          expect(h.backend?.entryCount()).toBe(0);
          expect(h.timers?.eventTimerCount()).toBe(0);
          if (prefetches !== undefined) expect(prefetches.calls).toBeGreaterThanOrEqual(batches.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
