import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  CheckpointCorruptError,
  StateEncodeError,
  TASK_STATE_FORMAT_VERSION,
  decodeTaskSnapshot,
  encodeTaskSnapshot,
} from '../../../lib/storage/index.ts';
import type { TaskSnapshot } from '../../../lib/storage/index.ts';
import type { KeyedStateSnapshot } from '../../../lib/state/index.ts';

function sampleSnapshot(): TaskSnapshot {
  return {
    vertex: 3,
    subtask: 1,
    sourceSplits: [{ split: 'in.jsonl', offset: 1234 }, { split: 'gen', position: 99n }],
    splitWatermarks: new Map([['in.jsonl', -Infinity], ['gen', 17]]),
    operators: [
      {
        nodeId: 7,
        watermark: -Infinity,
        keyed: {
          maxParallelism: 128,
          keyGroups: [
            {
              keyGroup: 5,
              states: {
                sum: [['acct-1', 'w1', { count: 3, total: 12.5, last: undefined }]],
                seen: [[42, '', new Map<string, unknown>([['a', new Set([1, 2])], ['b', { nested: { deep: [1, [2, [3]]] } }]])]],
              },
            },
          ],
        },
        timers: { eventTime: [[1000, 'acct-1', 'w1']], processingTime: [] },
        operatorState: [{ pending: ['.part-0.inprogress'], at: new Date(1_700_000_000_000) }],
      },
      { nodeId: 8, watermark: Infinity, operatorState: [undefined, null, Infinity, -Infinity, NaN] },
    ],
  };
}

function expectCorrupt(fn: () => unknown): CheckpointCorruptError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointCorruptError);
    expect((error as CheckpointCorruptError).retriable).toBe(false);
    return error as CheckpointCorruptError;
  }
  throw new Error('expected decode to throw CheckpointCorruptError');
}

describe('task state codec', () => {
  it('round-trips Maps, Sets, Dates, bigints, undefined, ±Infinity, NaN and nested objects', () => {
    const snapshot = sampleSnapshot();
    const decoded = decodeTaskSnapshot(encodeTaskSnapshot(snapshot));
    expect(decoded).toEqual(snapshot);
    const states = (decoded.operators[0]?.keyed as KeyedStateSnapshot | undefined)?.keyGroups[0]?.states;
    const seen = states?.seen?.[0]?.[2] as Map<string, unknown>;
    expect(seen).toBeInstanceOf(Map);
    expect(seen.get('a')).toBeInstanceOf(Set);
    expect(decoded.splitWatermarks).toBeInstanceOf(Map);
    expect((decoded.splitWatermarks as Map<string, number>).get('in.jsonl')).toBe(-Infinity);
    expect(decoded.operators[0]?.watermark).toBe(-Infinity);
    expect(decoded.operators[1]?.watermark).toBe(Infinity);
    expect(decoded.operators[1]?.operatorState).toEqual([undefined, null, Infinity, -Infinity, NaN]);
    const sum = states?.sum?.[0]?.[2] as Record<string, unknown>;
    expect('last' in sum).toBe(true);
    expect(sum.last).toBeUndefined();
    expect((decoded.operators[0]?.operatorState?.[0] as { at: Date }).at).toEqual(new Date(1_700_000_000_000));
  });

  it('starts with the magic and version and encodes deterministically', () => {
    const a = encodeTaskSnapshot(sampleSnapshot());
    const b = encodeTaskSnapshot(sampleSnapshot());
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    expect(Buffer.from(a.subarray(0, 4)).toString('latin1')).toBe('SLTS');
    expect(Buffer.from(a).readUInt16BE(4)).toBe(TASK_STATE_FORMAT_VERSION);
  });

  it('round-trips a payload of several megabytes', () => {
    const entries: [string, string, unknown][] = [];
    for (let i = 0; i < 100_000; i++) entries.push([`key-${i}`, `w${i % 7}`, { count: i, total: i * 1.5, tag: 'x'.repeat(40) }]);
    const snapshot: TaskSnapshot = {
      vertex: 1,
      subtask: 0,
      operators: [{ nodeId: 2, watermark: 5, keyed: { maxParallelism: 128, keyGroups: [{ keyGroup: 0, states: { big: entries } }] } }],
    };
    const bytes = encodeTaskSnapshot(snapshot);
    expect(bytes.byteLength).toBeGreaterThan(4 * 1024 * 1024);
    expect(decodeTaskSnapshot(bytes)).toEqual(snapshot);
  });

  it('rejects bad magic, an unknown version, truncation and trailing bytes, naming the file', () => {
    const good = Buffer.from(encodeTaskSnapshot(sampleSnapshot()));
    const badMagic = Buffer.from(good);
    badMagic[0] = 0x58;
    expect(expectCorrupt(() => decodeTaskSnapshot(badMagic, 'chk-1/task-3-1.state')).message).toContain('chk-1/task-3-1.state');
    const newer = Buffer.from(good);
    newer.writeUInt16BE(TASK_STATE_FORMAT_VERSION + 1, 4);
    expect(expectCorrupt(() => decodeTaskSnapshot(newer)).message).toContain('version 2 is not supported');
    expectCorrupt(() => decodeTaskSnapshot(good.subarray(0, good.length - 1)));
    expectCorrupt(() => decodeTaskSnapshot(good.subarray(0, 10)));
    expectCorrupt(() => decodeTaskSnapshot(new Uint8Array(0)));
    expectCorrupt(() => decodeTaskSnapshot(Buffer.concat([good, Buffer.from([0])])));
  });

  it('rejects a well-framed body that is not a task snapshot', () => {
    const notSnapshot = encodeTaskSnapshot({ vertex: 1, subtask: 0, operators: [] });
    expect(decodeTaskSnapshot(notSnapshot).operators).toEqual([]);
    const bogus = encodeTaskSnapshot({ vertex: 'x', subtask: 0, operators: [] } as unknown as TaskSnapshot);
    expectCorrupt(() => decodeTaskSnapshot(bogus));
  });

  it('reports unencodable state as a StateEncodeError naming the task', () => {
    const snapshot = { vertex: 2, subtask: 4, operators: [{ nodeId: 1, watermark: 0, operatorState: [Symbol('x')] }] };
    expect(() => encodeTaskSnapshot(snapshot)).toThrow(StateEncodeError);
    expect(() => encodeTaskSnapshot(snapshot)).toThrow(/task 2-4/);
  });

  it('detects any flipped byte or truncation (property)', () => {
    const good = Buffer.from(encodeTaskSnapshot(sampleSnapshot()));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ kind: fc.constant('flip' as const), at: fc.nat(good.length - 1), mask: fc.integer({ min: 1, max: 255 }) }),
          fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(good.length - 1) }),
        ),
        (damage) => {
          const damaged = Buffer.from(good);
          if (damage.kind === 'flip') damaged.writeUInt8(damaged.readUInt8(damage.at) ^ damage.mask, damage.at);
          expectCorrupt(() => decodeTaskSnapshot(damage.kind === 'flip' ? damaged : damaged.subarray(0, damage.at)));
        },
      ),
      { numRuns: 500 },
    );
  });
});
