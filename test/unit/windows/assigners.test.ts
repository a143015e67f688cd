import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import {
  EventTimeSessionWindows,
  ProcessingTimeSessionWindows,
  SlidingEventTimeWindows,
  SlidingProcessingTimeWindows,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
} from '../../../lib/operators/windows/assigners.ts';
import { greatestCommonDivisor, windowStart } from '../../../lib/operators/windows/window-math.ts';

describe('windowStart', () => {
  it('aligns to multiples of the size plus the offset, for negative timestamps too', () => {
    expect(windowStart(0, 0, 10)).toBe(0);
    expect(windowStart(9, 0, 10)).toBe(0);
    expect(windowStart(10, 0, 10)).toBe(10);
    expect(windowStart(-1, 0, 10)).toBe(-10);
    expect(windowStart(-10, 0, 10)).toBe(-10);
    expect(windowStart(-11, 0, 10)).toBe(-20);
    expect(windowStart(2, 3, 10)).toBe(-7);
    expect(windowStart(3, 3, 10)).toBe(3);
    expect(windowStart(5, -3, 10)).toBe(-3);
    expect(windowStart(7, -3, 10)).toBe(7);
    expect(windowStart(1_700_000_123_456, 0, 60_000)).toBe(1_700_000_100_000);
  });

  it('computes the greatest common divisor (the slice length of sliding windows)', () => {
    expect(greatestCommonDivisor(10, 4)).toBe(2);
    expect(greatestCommonDivisor(60_000, 15_000)).toBe(15_000);
    expect(greatestCommonDivisor(7, 3)).toBe(1);
  });
});

describe('tumbling windows', () => {
  it('assign one window [start, start + size)', () => {
    const w = TumblingEventTimeWindows.of(10);
    expect(w.assignWindows(15)).toEqual([{ start: 10, end: 20 }]);
    expect(w.assignWindows(-5)).toEqual([{ start: -10, end: 0 }]);
    expect(TumblingEventTimeWindows.of(10, 3).assignWindows(12)).toEqual([{ start: 3, end: 13 }]);
    expect(TumblingProcessingTimeWindows.of(10, -3).assignWindows(12)).toEqual([{ start: 7, end: 17 }]);
  });

  it('say which time they use', () => {
    const e = TumblingEventTimeWindows.of(1000);
    const p = TumblingProcessingTimeWindows.of(1000);
    expect([e.kind, e.isEventTime, e.sizeMs, e.offsetMs]).toEqual(['tumbling', true, 1000, 0]);
    expect([p.kind, p.isEventTime]).toEqual(['tumbling', false]);
    expect(String(e)).toBe('TumblingEventTimeWindows(size=1000ms, offset=0ms)');
  });

  it('reject sizes and offsets that are not usable, saying what to fix', () => {
    expect(() => TumblingEventTimeWindows.of(0)).toThrow(ConfigError);
    expect(() => TumblingEventTimeWindows.of(-5)).toThrow(/size must be a positive whole number of milliseconds, got -5/);
    expect(() => TumblingProcessingTimeWindows.of(1.5)).toThrow(/TumblingProcessingTimeWindows.of: size/);
    expect(() => TumblingEventTimeWindows.of(Number.NaN)).toThrow(ConfigError);
    expect(() => TumblingEventTimeWindows.of(Infinity)).toThrow(ConfigError);
    expect(() => TumblingEventTimeWindows.of(10, 10)).toThrow(/\|offset\| < size \(10 ms\), got 10; use offset % size/);
    expect(() => TumblingEventTimeWindows.of(10, -10)).toThrow(ConfigError);
    expect(() => TumblingEventTimeWindows.of(10, 0.5)).toThrow(ConfigError);
  });
});

describe('sliding windows', () => {
  it('assign every window containing the timestamp, latest first', () => {
    const w = SlidingEventTimeWindows.of(10, 5);
    expect(w.assignWindows(12)).toEqual([
      { start: 10, end: 20 },
      { start: 5, end: 15 },
    ]);
    expect(w.assignWindows(-1)).toEqual([
      { start: -5, end: 5 },
      { start: -10, end: 0 },
    ]);
    expect(SlidingEventTimeWindows.of(10, 4).assignWindows(9)).toEqual([
      { start: 8, end: 18 },
      { start: 4, end: 14 },
      { start: 0, end: 10 },
    ]);
    expect(SlidingProcessingTimeWindows.of(10, 4, 1).assignWindows(9)).toEqual([
      { start: 9, end: 19 },
      { start: 5, end: 15 },
      { start: 1, end: 11 },
    ]);
  });

  it('with slide = size behave as tumbling windows', () => {
    expect(SlidingEventTimeWindows.of(10, 10).assignWindows(-3)).toEqual([{ start: -10, end: 0 }]);
  });

  it('reject a slide larger than the size and offsets of a slide or more', () => {
    expect(() => SlidingEventTimeWindows.of(10, 20)).toThrow(/slide \(20 ms\) must not exceed size \(10 ms\)/);
    expect(() => SlidingEventTimeWindows.of(10, 0)).toThrow(/slide must be a positive whole number/);
    expect(() => SlidingProcessingTimeWindows.of(0, 1)).toThrow(/size must be/);
    expect(() => SlidingEventTimeWindows.of(10, 5, 5)).toThrow(/\|offset\| < slide \(5 ms\)/);
    expect(SlidingEventTimeWindows.of(10, 5, -4).offsetMs).toBe(-4);
  });
});

describe('session windows', () => {
  it('open [t, t + gap) per element', () => {
    expect(EventTimeSessionWindows.withGap(30).assignWindows(-10)).toEqual([{ start: -10, end: 20 }]);
    const p = ProcessingTimeSessionWindows.withGap(5);
    expect([p.kind, p.isEventTime, p.gapMs]).toEqual(['session', false, 5]);
    expect(String(EventTimeSessionWindows.withGap(30))).toBe('EventTimeSessionWindows(gap=30ms)');
  });

  it('reject gaps that are not positive whole milliseconds', () => {
    expect(() => EventTimeSessionWindows.withGap(0)).toThrow(/EventTimeSessionWindows.withGap: gap must be a positive/);
    expect(() => ProcessingTimeSessionWindows.withGap(2.5)).toThrow(ConfigError);
  });
});
