import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ConfigError, keyGroupOf, keyGroupRangeForSubtask } from '../../lib/core/index.ts';
import { HeapTimerService } from '../../lib/state/timers/heap-timer-service.ts';
import type { Timer } from '../../lib/state/timers/timer-service.ts';

const MAX_P = 128;
const service = (): HeapTimerService => new HeapTimerService({ maxParallelism: MAX_P });
const t = (timestamp: number, key: string | number, namespace: string | number = ''): Timer => ({
  timestamp,
  key,
  namespace,
});

describe('HeapTimerService', () => {
  it('pops event timers up to the watermark in timestamp order, registration order within a timestamp', () => {
    const s = service();
    s.registerEventTimeTimer('b', 'w1', 20);
    s.registerEventTimeTimer('a', 'w1', 10);
    s.registerEventTimeTimer('c', 'w2', 20);
    s.registerEventTimeTimer('a', 'w3', 20);
    s.registerEventTimeTimer('a', 'w1', 30);
    expect(s.eventTimerCount()).toBe(5);
    expect(s.nextEventTime()).toBe(10);
    expect(s.popEventTimeTimers(9)).toEqual([]);
    expect(s.popEventTimeTimers(20)).toEqual([t(10, 'a', 'w1'), t(20, 'b', 'w1'), t(20, 'c', 'w2'), t(20, 'a', 'w3')]);
    expect(s.eventTimerCount()).toBe(1);
    expect(s.nextEventTime()).toBe(30);
    expect(s.popEventTimeTimers(Number.POSITIVE_INFINITY)).toEqual([t(30, 'a', 'w1')]);
    expect(s.nextEventTime()).toBeUndefined();
    expect(s.eventTimerCount()).toBe(0);
  });

  it('dedupes on (timestamp, key, namespace), keeping the first registration position', () => {
    const s = service();
    s.registerEventTimeTimer('a', 1, 10);
    s.registerEventTimeTimer('b', 1, 10);
    s.registerEventTimeTimer('a', 1, 10);
    s.registerEventTimeTimer('a', 2, 10);
    s.registerEventTimeTimer('a', 2, 10);
    s.registerEventTimeTimer(1, 1, 10);
    s.registerEventTimeTimer('1', 1, 10);
    s.registerEventTimeTimer('a', '1', 10);
    expect(s.eventTimerCount()).toBe(6);
    expect(s.popEventTimeTimers(10)).toEqual([
      t(10, 'a', 1),
      t(10, 'b', 1),
      t(10, 'a', 2),
      t(10, 1, 1),
      t(10, '1', 1),
      t(10, 'a', '1'),
    ]);
  });

  it('deletes timers, including the last one of a timestamp and one of several namespaces of a key', () => {
    const s = service();
    s.registerEventTimeTimer('a', 1, 10);
    s.registerEventTimeTimer('a', 2, 10);
    s.registerEventTimeTimer('b', 1, 5);
    s.deleteEventTimeTimer('b', 1, 5);
    expect(s.nextEventTime()).toBe(10);
    s.deleteEventTimeTimer('a', 1, 10);
    s.deleteEventTimeTimer('a', 3, 10);
    s.deleteEventTimeTimer('zz', 1, 10);
    s.deleteEventTimeTimer('a', 2, 11);
    expect(s.eventTimerCount()).toBe(1);
    expect(s.popEventTimeTimers(100)).toEqual([t(10, 'a', 2)]);
    // Re-registering after a delete works and fires once.
    s.registerEventTimeTimer('a', 1, 10);
    s.deleteEventTimeTimer('a', 1, 10);
    s.registerEventTimeTimer('a', 1, 10);
    expect(s.popEventTimeTimers(10)).toEqual([t(10, 'a', 1)]);
  });

  it('keeps timestamp order after deleting a bucket in the middle of the heap', () => {
    const s = service();
    for (const ts of [1, 10, 2, 11, 12, 3, 4, 13, 14, 15, 16, 5]) s.registerEventTimeTimer('k', '', ts);
    // Deleting 11 moves the last heap entry (5) into 11's place under 10; it must move up.
    s.deleteEventTimeTimer('k', '', 11);
    expect(s.popEventTimeTimers(5).map((x) => x.timestamp)).toEqual([1, 2, 3, 4, 5]);
    expect(s.popEventTimeTimers(100).map((x) => x.timestamp)).toEqual([10, 12, 13, 14, 15, 16]);
  });

  it('keeps processing-time timers separate from event-time timers', () => {
    const s = service();
    s.registerProcessingTimeTimer('a', '', 100);
    s.registerEventTimeTimer('a', '', 50);
    expect(s.nextProcessingTime()).toBe(100);
    expect(s.processingTimerCount()).toBe(1);
    expect(s.popEventTimeTimers(1000)).toEqual([t(50, 'a')]);
    expect(s.popProcessingTimeTimers(99)).toEqual([]);
    s.registerProcessingTimeTimer('b', '', 40);
    expect(s.nextProcessingTime()).toBe(40);
    s.deleteProcessingTimeTimer('b', '', 40);
    expect(s.nextProcessingTime()).toBe(100);
    expect(s.popProcessingTimeTimers(100)).toEqual([t(100, 'a')]);
    expect(s.nextProcessingTime()).toBeUndefined();
  });

  it('rejects NaN timestamps', () => {
    expect(() => service().registerEventTimeTimer('a', '', Number.NaN)).toThrow(ConfigError);
  });

  it('matches a simple model under random registrations, deletions and pops', () => {
    type Op = { op: 'reg' | 'del'; ts: number; key: number; ns: number } | { op: 'pop'; ts: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        op: fc.constantFrom('reg' as const, 'reg' as const, 'del' as const),
        ts: fc.integer({ min: 0, max: 60 }),
        key: fc.integer({ min: 0, max: 2 }),
        ns: fc.integer({ min: 0, max: 1 }),
      }),
      fc.record({ op: fc.constant('pop' as const), ts: fc.integer({ min: 0, max: 70 }) }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), (ops) => {
        const s = service();
        // Model: pending timers in registration order.
        let model: Timer[] = [];
        const same = (a: Timer, ts: number, key: number, ns: number): boolean =>
          a.timestamp === ts && a.key === key && a.namespace === ns;
        for (const o of ops) {
          if (o.op === 'reg') {
            s.registerEventTimeTimer(o.key, o.ns, o.ts);
            if (!model.some((m) => same(m, o.ts, o.key, o.ns))) model.push(t(o.ts, o.key, o.ns));
          } else if (o.op === 'del') {
            s.deleteEventTimeTimer(o.key, o.ns, o.ts);
            model = model.filter((m) => !same(m, o.ts, o.key, o.ns));
          } else {
            const expected = model.filter((m) => m.timestamp <= o.ts);
            // Stable sort keeps registration order within a timestamp.
            expected.sort((a, b) => a.timestamp - b.timestamp);
            model = model.filter((m) => m.timestamp > o.ts);
            expect(s.popEventTimeTimers(o.ts)).toEqual(expected);
          }
          expect(s.eventTimerCount()).toBe(model.length);
          const min = model.reduce((acc, m) => Math.min(acc, m.timestamp), Number.POSITIVE_INFINITY);
          expect(s.nextEventTime()).toBe(model.length === 0 ? undefined : min);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('snapshots by key group and restores only the key groups in range (rescale 1 -> 2)', () => {
    const s = service();
    const keys = Array.from({ length: 50 }, (_, i) => `key-${i}`);
    keys.forEach((key, i) => {
      s.registerEventTimeTimer(key, 'w', 1000 + (i % 3));
      s.registerProcessingTimeTimer(key, '', 5000 - i);
    });
    const snapshot = s.snapshot();
    const groups = snapshot.map((g) => g.keyGroup);
    expect(groups).toEqual([...new Set(groups)].sort((a, b) => a - b));
    for (const g of snapshot) {
      for (const timer of [...g.eventTimers, ...g.processingTimers]) expect(keyGroupOf(timer.key, MAX_P)).toBe(g.keyGroup);
      const ts = g.eventTimers.map((x) => x.timestamp);
      expect(ts).toEqual([...ts].sort((a, b) => a - b));
    }
    // Snapshotting does not consume timers.
    expect(s.eventTimerCount()).toBe(50);

    const restored = [0, 1].map((subtask) => {
      const r = service();
      r.restore(snapshot, keyGroupRangeForSubtask(subtask, 2, MAX_P));
      return r;
    });
    expect(restored[0]!.eventTimerCount() + restored[1]!.eventTimerCount()).toBe(50);
    expect(restored[0]!.processingTimerCount() + restored[1]!.processingTimerCount()).toBe(50);
    for (const [subtask, r] of restored.entries()) {
      const range = keyGroupRangeForSubtask(subtask, 2, MAX_P);
      for (const timer of r.popEventTimeTimers(Number.POSITIVE_INFINITY)) {
        const kg = keyGroupOf(timer.key, MAX_P);
        expect(kg >= range.start && kg <= range.end).toBe(true);
      }
    }
    const all = service();
    all.restore(snapshot, { start: 0, end: MAX_P - 1 });
    expect(all.popProcessingTimeTimers(Number.POSITIVE_INFINITY).map((x) => x.key)).toEqual([...keys].reverse());
  });
});
