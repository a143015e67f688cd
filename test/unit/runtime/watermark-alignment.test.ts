import { describe, expect, it } from 'vitest';
import { ConfigError, WatermarkStrategy, jsonlFileSource, generatorSource } from '../../../lib/index.ts';
import { AlignmentGroups, resolveAlignment } from '../../../lib/runtime/alignment/alignment-groups.ts';
import { LocalAlignmentLink } from '../../../lib/runtime/alignment/alignment-link.ts';
import { SourceAlignment } from '../../../lib/runtime/alignment/source-alignment.ts';
import { SplitWatermarks } from '../../../lib/runtime/split-watermarks.ts';
import type { SourceNode } from '../../../lib/graph/logical-graph.ts';
import type { Source } from '../../../lib/connectors/source.ts';

const settings = { group: 'g', maxAllowedDriftMs: 100, updateIntervalMs: 50 };
/** The reader says every split has no data available (idleness then counts the timeout). */
const caughtUp = (): boolean => true;
/** Every timestamp in these tests is valid. */
const noInvalid = (): void => {
  throw new Error('unexpected invalid timestamp');
};

function sourceNode(source: Source<unknown>, watermarks: WatermarkStrategy<unknown> | undefined): SourceNode {
  return { kind: 'source', id: 0, name: 'src', parallelism: undefined, inputs: [], source, watermarks, stateMeaning: { operator: 'source' }, stateVersion: undefined };
}

describe('AlignmentGroups (the coordinator side)', () => {
  it('holds the minimum at -Infinity until every member reported, then takes the lowest report', () => {
    const groups = new AlignmentGroups(new Map([['g', ['0:0', '0:1']]]));
    expect(groups.minimum('g')).toBe(Number.NEGATIVE_INFINITY);
    expect(groups.report('g', '0:1', 5000)).toBeUndefined();
    expect(groups.report('g', '0:0', 1000)).toBe(1000);
    expect(groups.report('g', '0:0', 1200)).toBe(1200);
    expect(groups.report('g', '0:1', 6000)).toBeUndefined();
  });

  it('excludes idle and finished members; with none left nothing is held back', () => {
    const groups = new AlignmentGroups(new Map([['g', ['0:0', '0:1']]]));
    groups.report('g', '0:0', 1000);
    groups.report('g', '0:1', 5000);
    expect(groups.report('g', '0:0', undefined)).toBe(5000);
    expect(groups.report('g', '0:1', undefined)).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps groups apart', () => {
    const groups = new AlignmentGroups(new Map([['a', ['0:0']], ['b', ['1:0']]]));
    expect(groups.report('a', '0:0', 10)).toBe(10);
    expect(groups.minimum('b')).toBe(Number.NEGATIVE_INFINITY);
  });
});

describe('SourceAlignment (the subtask side)', () => {
  function aligned(): { alignment: SourceAlignment; groups: AlignmentGroups; other: (wm: number | undefined) => void } {
    const groups = new AlignmentGroups(new Map([['g', ['0:0', '0:1']]]));
    const link = new LocalAlignmentLink(groups);
    const alignment = new SourceAlignment(settings, link, '0:0');
    alignment.subscribe((apply) => apply());
    return { alignment, groups, other: (wm) => link.report('g', '0:1', wm) };
  }

  it('pauses a split more than the drift ahead of the slowest and resumes it when the slowest catches up', () => {
    const { alignment, other } = aligned();
    alignment.report(1000, 0, true);
    other(0);
    expect(alignment.maxAllowedWatermark).toBe(100);
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: ['a'], resume: [] });
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: [], resume: [] });
    other(899);
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: [], resume: [] });
    other(900);
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: [], resume: ['a'] });
  });

  it('never pauses the slowest split, even with a drift of 0', () => {
    const groups = new AlignmentGroups(new Map([['g', ['0:0']]]));
    const alignment = new SourceAlignment({ ...settings, maxAllowedDriftMs: 0 }, new LocalAlignmentLink(groups), '0:0');
    alignment.subscribe((apply) => apply());
    alignment.report(500, 0, true);
    expect(alignment.splitChanges(new Map([['slow', 500], ['fast', 501]]))).toEqual({ pause: ['fast'], resume: [] });
  });

  it('resumes a paused split once the slowest member finishes, or once the split itself is no longer active', () => {
    const { alignment, other } = aligned();
    alignment.report(1000, 0, true);
    other(0);
    alignment.splitChanges(new Map([['a', 1000], ['b', 2000]]));
    expect([...alignment.pausedSplits]).toEqual(['a', 'b']);
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: [], resume: ['b'] });
    other(undefined);
    // Only this member is left: its own watermark is the minimum.
    expect(alignment.maxAllowedWatermark).toBe(1100);
    expect(alignment.splitChanges(new Map([['a', 1000]]))).toEqual({ pause: [], resume: ['a'] });
  });

  it('pauses a whole subtask only when its own watermark is ahead (readers that cannot pause single splits)', () => {
    const { alignment, other } = aligned();
    alignment.report(50, 0, true);
    other(0);
    expect(alignment.subtaskPaused(50)).toBe(false);
    expect(alignment.subtaskPaused(101)).toBe(true);
  });

  it('pauses everything that has read before the group has heard from every member', () => {
    const { alignment } = aligned();
    expect(alignment.subtaskPaused(Number.NEGATIVE_INFINITY)).toBe(false);
    expect(alignment.subtaskPaused(0)).toBe(true);
  });

  it('reports at most once per update interval unless forced, and never the same value twice', () => {
    const sent: (number | undefined)[] = [];
    const alignment = new SourceAlignment(settings, { report: (_g, _m, wm) => sent.push(wm), subscribe() {} }, '0:0');
    alignment.report(1, 0, false);
    alignment.report(2, 10, false);
    alignment.report(3, 60, false);
    alignment.report(3, 200, true);
    alignment.report(4, 201, true);
    alignment.report(undefined, 202, true);
    expect(sent).toEqual([1, 3, 4, undefined]);
  });
});

describe('SplitWatermarks with alignment', () => {
  it('does not count a paused split as idle, and restarts its idle timeout when it resumes', () => {
    const strategy = WatermarkStrategy.forMonotonousTimestamps<unknown>().withIdleness(1000) as WatermarkStrategy<unknown>;
    const wms = new SplitWatermarks(strategy, 'src', 0, 0);
    wms.onBatch({ values: [1], timestamps: [10], split: 'a' }, 0, noInvalid);
    wms.setPaused(['a'], true, 0);
    expect(wms.checkIdle(5000, caughtUp)).toBe(false);
    wms.setPaused(['a'], false, 5000);
    expect(wms.checkIdle(5000, caughtUp)).toBe(false);
    expect(wms.checkIdle(5500, caughtUp)).toBe(false);
    expect(wms.checkIdle(6000, caughtUp)).toBe(true);
  });

  it('reports to the group the lowest split that has data to read: caught-up, idle and finished splits are not waited for', () => {
    const strategy = WatermarkStrategy.forMonotonousTimestamps<unknown>() as WatermarkStrategy<unknown>;
    const wms = new SplitWatermarks(strategy, 'src', 0, 0);
    expect(wms.alignmentWatermark()).toBeUndefined();
    wms.register(['a', 'b'], 0);
    // Registered concurrent splits without records hold everyone back until the reader says they have no data.
    expect(wms.alignmentWatermark()).toBe(Number.NEGATIVE_INFINITY);
    wms.onBatch({ values: [1], timestamps: [1000], split: 'b' }, 0, noInvalid);
    wms.markCaughtUp(['a']);
    expect(wms.alignmentWatermark()).toBe(999);
    // Without a list, every split that is not paused has no data.
    wms.setPaused(['b'], true, 0);
    wms.onBatch({ values: [1], timestamps: [10], split: 'a' }, 0, noInvalid);
    expect(wms.alignmentWatermark()).toBe(9);
    wms.markCaughtUp(undefined);
    expect(wms.alignmentWatermark()).toBe(999);
    wms.markFinished('b');
    expect(wms.alignmentWatermark()).toBeUndefined();
  });

  it('lists the watermarks of active splits only', () => {
    const strategy = WatermarkStrategy.forMonotonousTimestamps<unknown>() as WatermarkStrategy<unknown>;
    const wms = new SplitWatermarks(strategy, 'src', 0, 0);
    wms.onBatch({ values: [1], timestamps: [10], split: 'a' }, 0, noInvalid);
    wms.onBatch({ values: [1], timestamps: [20], split: 'b' }, 0, noInvalid);
    wms.markFinished('a');
    expect(wms.activeWatermarks()).toEqual(new Map([['b', 19]]));
  });
});

describe('watermark alignment settings', () => {
  const file = jsonlFileSource({ path: 'unused.jsonl' }) as Source<unknown>;
  const generator = generatorSource({ count: 1 }) as Source<unknown>;
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<unknown>(10);

  it('is on by default for the file source, with a 30 s drift, and off for sources that do not ask for it', () => {
    expect(resolveAlignment(sourceNode(file, strategy))).toMatchObject({ maxAllowedDriftMs: 30_000, updateIntervalMs: 200 });
    expect(resolveAlignment(sourceNode(generator, strategy))).toBeUndefined();
    expect(resolveAlignment(sourceNode(file, undefined))).toBeUndefined();
  });

  it('follows the strategy: its own group and drift, or none', () => {
    const own = strategy.withWatermarkAlignment('orders', 5000, 100);
    expect(resolveAlignment(sourceNode(generator, own))).toEqual({ group: 'orders', maxAllowedDriftMs: 5000, updateIntervalMs: 100 });
    expect(resolveAlignment(sourceNode(file, strategy.withoutWatermarkAlignment()))).toBeUndefined();
    // Later with* calls keep it.
    expect(resolveAlignment(sourceNode(file, own.withIdleness(10).withTimestampAssigner(() => 0)))?.group).toBe('orders');
  });

  it('refuses bad parameters with a ConfigError', () => {
    expect(() => strategy.withWatermarkAlignment('', 10)).toThrow(ConfigError);
    expect(() => strategy.withWatermarkAlignment('g', -1)).toThrow(ConfigError);
    expect(() => strategy.withWatermarkAlignment('g', 10, 0)).toThrow(ConfigError);
  });
});
