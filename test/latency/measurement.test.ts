import { describe, expect, it } from 'vitest';
import { BUCKETS, LatencyHistogram, highestValueOf, type HistogramData } from '../../bench/latency/histogram.ts';
import { FixedRateSchedule } from '../../bench/latency/schedule.ts';
import { fixedRateSource } from '../../bench/latency/fixed-rate-source.ts';
import type { LatencyRecord, WindowCount } from '../../bench/latency/record.ts';
import { listen, report, type LatencyMessage } from '../../bench/latency/reports.ts';
import { windowLatencySink } from '../../bench/latency/sinks.ts';
import { WindowClosingGenerator } from '../../bench/latency/window-closing.ts';
import type { PollResult, RecordBatch } from '../../lib/index.ts';
import { systemClock } from '../../lib/core/index.ts';

describe('LatencyHistogram', () => {
  it('gives exact nearest-rank percentiles below 128 µs', () => {
    const h = new LatencyHistogram();
    for (let v = 100; v >= 1; v--) h.recordMicros(v);
    expect(h.count).toBe(100);
    expect(h.percentileMicros(50)).toBe(50);
    expect(h.percentileMicros(99)).toBe(99);
    expect(h.percentileMicros(99.9)).toBe(100);
    expect(h.percentileMicros(100)).toBe(100);
    expect(h.maxMicros).toBe(100);
  });

  it('is exact for values at bucket tops, and within 1/64 above for any value', () => {
    const h = new LatencyHistogram();
    // 1,000 values: 990 of 1 ms (1000 µs), 9 of 20 ms, 1 of 2 s.
    for (let i = 0; i < 990; i++) h.recordMillis(1);
    for (let i = 0; i < 9; i++) h.recordMillis(20);
    h.recordMillis(2000);
    const p50 = h.percentileMicros(50);
    expect(p50).toBeGreaterThanOrEqual(1000);
    expect(p50).toBeLessThanOrEqual(1000 * (1 + 1 / 64));
    expect(h.percentileMicros(99)).toBe(p50);
    const p999 = h.percentileMicros(99.9);
    expect(p999).toBeGreaterThanOrEqual(20_000);
    expect(p999).toBeLessThanOrEqual(20_000 * (1 + 1 / 64));
    expect(h.percentileMicros(100)).toBe(2_000_000);
    expect(h.maxMicros).toBe(2_000_000);

    const tops = new LatencyHistogram();
    const values = [127, highestValueOf(128), highestValueOf(200), highestValueOf(1000)];
    for (const v of values) tops.recordMicros(v);
    expect([25, 50, 75, 100].map((p) => tops.percentileMicros(p))).toEqual(values);
  });

  it('puts every value in a bucket whose top is at most 1/64 above it', () => {
    for (let v = 0; v < 5_000_000; v = v * 1.07 + 1) {
      const micros = Math.floor(v);
      const h = new LatencyHistogram();
      h.recordMicros(micros);
      h.recordMicros(micros);
      // The percentile is capped at the maximum; a second, larger value shows the bucket's top.
      h.recordMicros(micros + 10 ** 9);
      const top = h.percentileMicros(50);
      expect(top).toBeGreaterThanOrEqual(micros);
      expect(top).toBeLessThanOrEqual(micros + micros / 64);
    }
    expect(highestValueOf(BUCKETS - 1)).toBeGreaterThanOrEqual(2 ** 32 - 1);
  });

  it('merges histograms by adding counts', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    for (let v = 1; v <= 50; v++) a.recordMicros(v);
    for (let v = 51; v <= 100; v++) b.recordMicros(v);
    a.add(b.data());
    expect(a.count).toBe(100);
    expect(a.percentileMicros(50)).toBe(50);
    expect(a.percentileMicros(99)).toBe(99);
    expect(a.maxMicros).toBe(100);
    expect(new LatencyHistogram().percentileMicros(99)).toBe(0);
  });
});

describe('FixedRateSchedule', () => {
  it('fixes every intended time in advance', () => {
    const s = new FixedRateSchedule(1_000, 4_000, 10);
    expect(Array.from({ length: 4 }, (_, i) => s.intendedTime(i))).toEqual([1_000, 1_000.25, 1_000.5, 1_000.75]);
    expect(s.dueBy(999)).toBe(0);
    expect(s.dueBy(1_000)).toBe(1);
    expect(s.dueBy(1_000.6)).toBe(3);
    // Far behind schedule: everything is due, at most the total.
    expect(s.dueBy(1_000_000)).toBe(10);
  });
});

describe('fixedRateSource', () => {
  async function reader(subtask: number, parallelism: number) {
    const source = fixedRateSource({ rate: 1_000, seconds: 1, warmupSeconds: 1, keys: 10 });
    const splits = await source.createSplits({ parallelism });
    return source.createReader([splits[subtask]!], { subtask, parallelism, clock: systemClock, signal: new AbortController().signal });
  }

  it('stamps records with their intended times even when polled late', async () => {
    const r = await reader(0, 1);
    const first = (await r.poll(1024)) as PollResult<LatencyRecord>;
    expect(first.kind).toBe('batch');
    const start = first.kind === 'batch' ? first.batch.values[0]!.stamp : 0;
    // Fall behind by 50 ms: the records due meanwhile come at once, each stamped 1 ms after the previous one.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const late = (await r.poll(1024)) as PollResult<LatencyRecord>;
    expect(late.kind).toBe('batch');
    if (late.kind !== 'batch') return;
    expect(late.batch.values.length).toBeGreaterThanOrEqual(40);
    late.batch.values.forEach((record, i) => {
      expect(record.stamp).toBeCloseTo(start + (i + 1), 6);
      expect(late.batch.timestamps[i]).toBe(Math.floor(record.stamp));
      expect(record.measured).toBe(false); // still in the 1 s warm-up
    });
  });

  it('interleaves the subtasks: each emits rate / parallelism, offset by its share of an interval', async () => {
    const r = await reader(1, 2);
    let first = (await r.poll(1024)) as PollResult<LatencyRecord>;
    // Subtask 1 starts half an interval (1 ms) after its first poll.
    while (first.kind !== 'batch' || first.batch.values.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      first = (await r.poll(1024)) as PollResult<LatencyRecord>;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    const next = (await r.poll(1024)) as PollResult<LatencyRecord>;
    if (first.kind !== 'batch' || next.kind !== 'batch') throw new Error('expected batches');
    const start = first.batch.values[0]!.stamp;
    next.batch.values.forEach((record, i) => expect(record.stamp).toBeCloseTo(start + 2 * (first.batch.values.length + i), 6));
    // Keys: subtask 1 of 2 takes the odd positions.
    expect(first.batch.values[0]!.key).toBe(1);
  });
});

describe('WindowClosingGenerator', () => {
  it('reports each window end once, when the watermark first passes it, and which windows are all measured', async () => {
    const messages: LatencyMessage[] = [];
    const channel = listen((m) => messages.push(m));
    try {
      const generator = new WindowClosingGenerator(1000);
      const record = (measured: boolean): LatencyRecord => ({ key: 0, stamp: 0, measured });
      generator.onEvent(record(false), 1500);
      expect(generator.currentWatermark()).toBe(1499);
      generator.onEvent(record(false), 1999);
      generator.currentWatermark();
      generator.onEvent(record(true), 2000); // closes [1000, 2000)
      expect(generator.currentWatermark()).toBe(1999);
      generator.currentWatermark(); // nothing new
      generator.onEvent(record(true), 4500); // closes [2000, 3000) and [3000, 4000)
      generator.currentWatermark();
      // BroadcastChannel messages arrive on a later turn of the event loop.
      for (let i = 0; i < 50 && messages.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      const closed = messages.flatMap((m) => (m.kind === 'closed' ? [[m.end, m.measured]] : []));
      // [2000, 3000) starts at the first measured millisecond, which may hold records from before the warm-up's end.
      expect(closed).toEqual([
        [2000, false],
        [3000, false],
        [4000, true],
      ]);
    } finally {
      channel.close();
    }
  });
});

describe('windowLatencySink', () => {
  it('counts the results of measured windows once every source subtask reported them closed, whichever comes first', async () => {
    const histograms: HistogramData[] = [];
    const channel = listen((m) => {
      if (m.kind === 'histogram') histograms.push(m.data);
    });
    const settle = async (until: () => boolean) => {
      for (let i = 0; i < 50 && !until(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    try {
      const writer = await windowLatencySink(2).createWriter({ subtask: 0, parallelism: 1, operatorName: 'sink' });
      const results = (end: number, n: number): RecordBatch<WindowCount> => ({
        values: Array.from({ length: n }, (_, key) => ({ key, count: 1, end })),
        timestamps: Array.from({ length: n }, () => end - 1),
      });
      // Window 1000: results first, then both reports. Window 2000: reports first. Window 3000: one report only.
      // Window 4000: not measured.
      await writer.write(results(1000, 3));
      report({ kind: 'closed', end: 1000, at: 1, measured: true });
      report({ kind: 'closed', end: 1000, at: 2, measured: true });
      report({ kind: 'closed', end: 2000, at: 3, measured: true });
      report({ kind: 'closed', end: 2000, at: 4, measured: true });
      report({ kind: 'closed', end: 3000, at: 5, measured: true });
      report({ kind: 'closed', end: 4000, at: 6, measured: false });
      report({ kind: 'closed', end: 4000, at: 7, measured: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await writer.write(results(2000, 5));
      await writer.write(results(3000, 7));
      await writer.write(results(4000, 11));
      await writer.finish?.();
      await settle(() => histograms.length > 0);
      expect(histograms.map((h) => h.total)).toEqual([3 + 5]);
    } finally {
      channel.close();
    }
  });
});
