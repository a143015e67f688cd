import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  StreamEnvironment,
  collectSink,
  runInThisThread,
  OutputTag,
  WatermarkStrategy,
  TumblingEventTimeWindows,
  SlidingEventTimeWindows,
  EventTimeSessionWindows,
  type WindowAssigner,
} from '../../lib/index.ts';
import { collectionSource } from '../../lib/connectors/local/collection-source.ts';
import { runWindowModel, type ModelAssigner, type ModelBatch } from '../harness/window-model.ts';

/**
 * End to end through the runtime: one source split with random batch boundaries, a bounded-out-of-orderness
 * watermark after each batch, keyBy, and a window operator at parallelism 1..4. Every key's window results (in
 * emission order) and the late side output must equal the brute-force model's, whatever the parallelism.
 */
interface Ev {
  id: number;
  key: string;
  ts: number;
}

const assignerArb = fc.oneof(
  fc.record({ kind: fc.constant('tumbling' as const), size: fc.integer({ min: 1, max: 30 }) }),
  fc
    .record({ kind: fc.constant('sliding' as const), size: fc.integer({ min: 2, max: 30 }), slideDiv: fc.integer({ min: 1, max: 5 }) })
    .map(({ size, slideDiv }) => ({ kind: 'sliding' as const, size, slide: Math.max(1, Math.floor(size / slideDiv)) })),
  fc.record({ kind: fc.constant('session' as const), gap: fc.integer({ min: 1, max: 15 }) }),
);

function toAssigner(a: ModelAssigner): WindowAssigner {
  switch (a.kind) {
    case 'tumbling':
      return TumblingEventTimeWindows.of(a.size);
    case 'sliding':
      return SlidingEventTimeWindows.of(a.size, a.slide);
    case 'session':
      return EventTimeSessionWindows.withGap(a.gap);
  }
}

const caseArb = fc.record({
  assigner: assignerArb,
  lateness: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 20 })),
  delay: fc.integer({ min: 0, max: 10 }),
  parallelism: fc.integer({ min: 1, max: 4 }),
  // Timestamps drift upward with random jitter, so some records are out of order and some are late.
  steps: fc.array(fc.record({ advance: fc.integer({ min: 0, max: 6 }), jitter: fc.integer({ min: 0, max: 25 }), key: fc.integer({ min: 0, max: 5 }) }), {
    minLength: 1,
    maxLength: 120,
  }),
  batchSizes: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 40 }),
});

describe('windows end to end at parallelism 1..4', () => {
  it('match the brute-force model for every window kind, with allowed lateness and late side output', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ assigner, lateness, delay, parallelism, steps, batchSizes }) => {
        let clock = 0;
        const events: Ev[] = steps.map((s, id) => {
          clock += s.advance;
          return { id, key: `k${s.key}`, ts: Math.max(0, clock - s.jitter) };
        });
        // The batches the source will emit, and the watermark the source emits after each.
        const batches: ModelBatch<Ev>[] = [];
        let pos = 0;
        let maxTs = Number.NEGATIVE_INFINITY;
        for (let b = 0; pos < events.length; b++) {
          const size = Math.max(1, b < batchSizes.length ? batchSizes[b]! : 1024);
          const slice = events.slice(pos, pos + size);
          pos += slice.length;
          for (const e of slice) maxTs = Math.max(maxTs, e.ts);
          batches.push({ values: slice, timestamps: slice.map((e) => e.ts), watermark: maxTs - delay - 1 });
        }
        batches.push({ values: [], timestamps: [], watermark: Number.POSITIVE_INFINITY });
        const model = runWindowModel({ assigner, allowedLateness: lateness, keySelector: (e: Ev) => e.key, batches });

        const env = new StreamEnvironment({ parallelism });
        const lateTag = new OutputTag<Ev>('late');
        const results = collectSink<{ key: string; start: number; end: number; ids: number[] }>('results');
        const late = collectSink<Ev>('late');
        const windowed = env
          .fromSource(collectionSource(events, { timestampOf: (e) => e.ts, batchSizes }), WatermarkStrategy.forBoundedOutOfOrderness<Ev>(delay))
          .keyBy((e) => e.key)
          .window(toAssigner(assigner))
          .allowedLateness(lateness)
          .sideOutputLateData(lateTag)
          .process<{ key: string; start: number; end: number; ids: number[] }>({
            process(key, ctx, elements, out) {
              out.collect({ key, start: ctx.window.start, end: ctx.window.end, ids: elements.map((e) => e.id).sort((a, b) => a - b) });
            },
          });
        windowed.sinkTo(results);
        windowed.getSideOutput(lateTag).sinkTo(late);
        await runInThisThread(env);

        const perKey = (rows: { key: string; start: number; end: number; ids: number[] }[]) => {
          const m = new Map<string, string[]>();
          for (const r of rows) m.set(r.key, [...(m.get(r.key) ?? []), `[${r.start},${r.end}):${r.ids.join(',')}`]);
          return Object.fromEntries([...m.entries()].sort());
        };
        const expected = model.firings.map((f) => ({
          key: f.key as string,
          start: f.window.start,
          end: f.window.end,
          ids: f.elements.map((e) => e.id).sort((a, b) => a - b),
        }));
        expect(perKey(results.values)).toEqual(perKey(expected));
        expect(late.values.map((e) => e.id).sort((a, b) => a - b)).toEqual(model.late.map((l) => l.value.id).sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });
});
