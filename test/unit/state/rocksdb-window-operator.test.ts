import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchOf, ManualClock, MAX_WATERMARK, type OutputTag, type RecordBatch } from '../../../lib/core/index.ts';
import { HeapTimerService } from '../../../lib/state/timers/heap-timer-service.ts';
import type { OperatorContext } from '../../../lib/operators/operator.ts';
import type { Output } from '../../../lib/operators/output.ts';
import type { InternalTimerService, TimerKeyGroupSnapshot } from '../../../lib/state/timers/timer-service.ts';
import {
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  type WindowAssigner,
} from '../../../lib/operators/windows/assigners.ts';
import { createWindowOperator, type WindowOperator } from '../../../lib/operators/windows/window-operator.ts';
import { isPendingKeyedSnapshot, type KeyedStateBackend, type KeyedStateHandle } from '../../../lib/state/index.ts';
import { MemoryKeyedStateBackend } from '../../../lib/state/memory/memory-backend.ts';
import { RocksDbKeyedStateBackend } from '../../../lib/state/rocksdb/index.ts';
import { TempSharedStore } from '../../contract/temp-shared-store.ts';
import { windowFunction, type Ev, type FnKind, type Out } from '../windows/window-functions.ts';
import { fastTempDir, FULL_RANGE, MAX_PARALLELISM, removeDir, rocksBackend } from './rocksdb-test-env.ts';

/*
 * The window operator on the RocksDB backend with a tiny cache (every batch prefetches its keys, every round of
 * timers prefetches theirs, most state lives in RocksDB) must emit exactly what it emits on the memory backend,
 * also when it is checkpointed and restored halfway.
 */

type Step = { kind: 'batch'; events: Ev[]; timestamps: number[] } | { kind: 'watermark'; at: number } | { kind: 'restore' };

class Collect implements Output<Out> {
  readonly values: Out[] = [];
  emit(batch: RecordBatch<Out>): void {
    this.values.push(...batch.values);
  }
  emitWatermark(): void {}
  emitSide<S>(_tag: OutputTag<S>, _batch: RecordBatch<S>): void {}
}

interface Running {
  operator: WindowOperator<Ev, Out>;
  backend: KeyedStateBackend;
  timers: InternalTimerService;
}

async function openOperator(assigner: WindowAssigner, fn: FnKind, backend: KeyedStateBackend, output: Collect, watermark: number): Promise<Running> {
  // As the runtime pairs them: timers in RocksDB with the RocksDB backend, on the heap with the memory one.
  const timers = backend instanceof RocksDbKeyedStateBackend ? backend.timerService() : new HeapTimerService({ maxParallelism: MAX_PARALLELISM });
  const operator = createWindowOperator<Ev, string, Out>({ name: 'w', keySelector: (e) => e.key, assigner, allowedLatenessMs: 0, fn: windowFunction(fn) });
  const ctx: OperatorContext = {
    operatorName: 'w',
    subtask: 0,
    parallelism: 1,
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: FULL_RANGE,
    clock: new ManualClock(0),
    keyedState: backend,
    timers,
    checkpointing: true,
    fencing: { attempt: 0, epoch: 0 },
    currentWatermark: () => watermark,
    requestProcessingTimeWakeup: () => undefined,
  };
  await operator.open?.(ctx, output);
  return { operator, backend, timers };
}

const stepsArb: fc.Arbitrary<Step[]> = fc
  .array(
    fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .array(fc.record({ k: fc.integer({ min: 0, max: 40 }), v: fc.integer({ min: 0, max: 9 }), dt: fc.integer({ min: -3, max: 8 }) }), { minLength: 1, maxLength: 30 })
          .map((raw) => ({ kind: 'batch' as const, raw })),
      },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 10 }).map((dt) => ({ kind: 'watermark' as const, dt })) },
      { weight: 1, arbitrary: fc.constant({ kind: 'restore' as const }) },
    ),
    { maxLength: 25 },
  )
  .map((raw) => {
    // Timestamps drift upwards; watermarks trail them and never go back.
    let time = 0;
    let watermark = 0;
    let id = 0;
    return raw.map((step): Step => {
      if (step.kind === 'restore') return step;
      if (step.kind === 'watermark') {
        watermark = Math.max(watermark, time - step.dt);
        return { kind: 'watermark', at: watermark };
      }
      const events: Ev[] = [];
      const timestamps: number[] = [];
      for (const e of step.raw) {
        time = Math.max(0, time + e.dt);
        events.push({ key: `key-${e.k}`, v: e.v, id: id++ });
        timestamps.push(time);
      }
      return { kind: 'batch', events, timestamps };
    });
  });

const assignerArb = fc.oneof(
  fc.integer({ min: 1, max: 12 }).map((size) => TumblingEventTimeWindows.of(size) as WindowAssigner),
  fc.integer({ min: 1, max: 5 }).map((slide) => SlidingEventTimeWindows.of(slide * 3, slide) as WindowAssigner),
  fc.integer({ min: 1, max: 6 }).map((gap) => EventTimeSessionWindows.withGap(gap) as WindowAssigner),
);

function canonical(values: readonly Out[]): string[] {
  return values.map((v) => JSON.stringify(v)).sort();
}

describe('window operator on the RocksDB backend', () => {
  let stateDir: string;
  let store: TempSharedStore;

  beforeAll(async () => {
    stateDir = fastTempDir('sluice-rocks-window-');
    store = await TempSharedStore.create();
  });

  afterAll(async () => {
    removeDir(stateDir);
    await store.dispose();
  });

  async function run(steps: readonly Step[], assigner: WindowAssigner, fn: FnKind, rocksCache: number | undefined): Promise<Out[]> {
    const output = new Collect();
    const newBackend = async (): Promise<KeyedStateBackend> => {
      if (rocksCache === undefined) return new MemoryKeyedStateBackend({ keyGroupRange: FULL_RANGE, maxParallelism: MAX_PARALLELISM, now: () => 0 });
      const b = rocksBackend({ stateDir, options: { cacheMaxKeys: rocksCache } });
      await b.whenIdle();
      return b;
    };
    let watermark = Number.NEGATIVE_INFINITY;
    let running = await openOperator(assigner, fn, await newBackend(), output, watermark);
    let checkpointId = 0;
    try {
      for (const step of steps) {
        if (step.kind === 'batch') await running.operator.processBatch(batchOf(step.events, step.timestamps), 0);
        else if (step.kind === 'watermark') {
          if (step.at > watermark) {
            watermark = step.at;
            await running.operator.processWatermark?.(watermark);
          }
        } else {
          const pending = running.backend.snapshot(++checkpointId);
          const keyed: KeyedStateHandle = isPendingKeyedSnapshot(pending) ? await pending.complete(store) : pending;
          const timers: TimerKeyGroupSnapshot[] = running.timers.snapshot();
          await running.backend.dispose();
          const backend = await newBackend();
          await backend.restore([keyed], store);
          running = await openOperator(assigner, fn, backend, output, watermark);
          running.timers.restore([...timers, ...(backend.takeRestoredTimers?.() ?? [])], FULL_RANGE);
        }
      }
      await running.operator.processWatermark?.(MAX_WATERMARK);
      return output.values;
    } finally {
      await running.backend.dispose();
    }
  }

  it('emits exactly what it emits on the memory backend, with a tiny cache and restores halfway', async () => {
    await fc.assert(
      fc.asyncProperty(stepsArb, assignerArb, fc.constantFrom<FnKind>('reduce', 'aggregate', 'process'), fc.integer({ min: 1, max: 4 }), async (steps, assigner, fn, cache) => {
        const expected = await run(steps, assigner, fn, undefined);
        const actual = await run(steps, assigner, fn, cache);
        // Timers of one timestamp fire in registration order on the heap and in key order in RocksDB.
        expect(canonical(actual)).toEqual(canonical(expected));
      }),
      { numRuns: 40 },
    );
  });
});
