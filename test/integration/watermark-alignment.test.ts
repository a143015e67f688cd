import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_ALLOWED_DRIFT_MS,
  StreamEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  collectSink,
  jsonlFileSource,
  runInThisThread,
  type AggregateFunction,
} from '../../lib/index.ts';

interface Event {
  readonly key: string;
  readonly ts: number;
}

const WINDOW_MS = 10_000;
const KEYS = 4;
/** 600 s of event time, one record every 100 ms: 60 windows per key, the second half 300 s after the first. */
const EVENTS = 6000;

/** Counts (key, window) pairs in state: an accumulator is created for a window's first record and read when it fires. */
function openWindowProbe(): { aggregate: AggregateFunction<Event, number, number>; readonly maxOpen: number } {
  let open = 0;
  let maxOpen = 0;
  return {
    aggregate: {
      createAccumulator: () => {
        open++;
        maxOpen = Math.max(maxOpen, open);
        return 0;
      },
      add: (_e, acc) => acc + 1,
      getResult: (acc) => {
        open--;
        return acc;
      },
      merge: (a, b) => a + b,
    },
    get maxOpen() {
      return maxOpen;
    },
  };
}

describe('watermark alignment of file splits', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function run(parallelism: number, strategy: WatermarkStrategy<Event>): Promise<{ rows: string[]; maxOpen: number }> {
    const env = new StreamEnvironment({ parallelism, batchSize: 50 });
    const probe = openWindowProbe();
    const sink = collectSink<string>();
    env
      .fromSource(jsonlFileSource<Event>({ path: join(dir, 'events.jsonl') }), strategy)
      .keyBy((e) => e.key)
      .window(TumblingEventTimeWindows.of(WINDOW_MS))
      .aggregate(probe.aggregate, (count, key, window) => `${key}@${window.start}=${count}`)
      .sinkTo(sink);
    const checkpoints = join(dir, `chk-${parallelism}-${Math.random()}`);
    await runInThisThread(env, { checkpointing: { dir: checkpoints, intervalMs: 20 }, log: () => {} });
    return { rows: [...sink.values].sort(), maxOpen: probe.maxOpen };
  }

  it('keeps the windows in state bounded at parallelism 2 on a time-ordered file, with the results of parallelism 1', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-align-'));
    const lines = Array.from({ length: EVENTS }, (_, i) => JSON.stringify({ key: `k${i % KEYS}`, ts: 1_700_000_000_000 + i * 100 }));
    writeFileSync(join(dir, 'events.jsonl'), `${lines.join('\n')}\n`);
    const strategy = WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((e) => e.ts);

    const p1 = await run(1, strategy);
    const p2 = await run(2, strategy);
    expect(p1.rows).toHaveLength(KEYS * ((EVENTS * 100) / WINDOW_MS));
    expect(p2.rows).toEqual(p1.rows);
    // The second split starts 300 s (30 windows) ahead: unaligned, its windows wait in state for the first split.
    // Aligned, a split runs at most the drift ahead: drift / window windows per key, plus the open window, one batch
    // and the records in flight to the window operator.
    const bound = KEYS * (DEFAULT_MAX_ALLOWED_DRIFT_MS / WINDOW_MS + 4);
    expect(p2.maxOpen).toBeLessThanOrEqual(bound);

    // Turned off, the windows pile up (what the bound above guards against).
    const unaligned = await run(2, strategy.withoutWatermarkAlignment());
    expect(unaligned.rows).toEqual(p1.rows);
    expect(unaligned.maxOpen).toBeGreaterThan(bound);
  });

  it('aligns with the drift the job sets', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-align-'));
    const lines = Array.from({ length: EVENTS }, (_, i) => JSON.stringify({ key: `k${i % KEYS}`, ts: 1_700_000_000_000 + i * 100 }));
    writeFileSync(join(dir, 'events.jsonl'), `${lines.join('\n')}\n`);
    const base = WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((e) => e.ts);
    const p1 = await run(1, base);
    const p2 = await run(2, base.withWatermarkAlignment('events', WINDOW_MS, 20));
    expect(p2.rows).toEqual(p1.rows);
    expect(p2.maxOpen).toBeLessThanOrEqual(KEYS * (WINDOW_MS / WINDOW_MS + 4));
  });
});
