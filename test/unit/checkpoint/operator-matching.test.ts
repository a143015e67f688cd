import { describe, expect, it } from 'vitest';
import { checkOperatorMatch, matchOperators, meaningDifferences } from '../../../lib/checkpoint/operator-matching.ts';
import type { OperatorStateRecord } from '../../../lib/checkpoint/types.ts';
import { ConfigError } from '../../../lib/core/index.ts';

const op = (nodeId: number, name: string, meaning: Record<string, string | number> = {}, stateful = true, vertex = 0): OperatorStateRecord => ({
  nodeId,
  vertex,
  name,
  stateful,
  meaning,
});
const opts = { what: 'checkpoint 3 in ck', allowNonRestoredState: false };

describe('matchOperators', () => {
  it('pairs by name, and same-named operators by their order, whatever their node ids', () => {
    const before = [op(0, 'src'), op(1, 'Map', {}, false), op(2, 'totals'), op(3, 'Map', {}, false), op(4, 'out')];
    const now = [op(0, 'src'), op(1, 'Map', {}, false), op(2, 'Map', {}, false), op(3, 'out')];
    const match = matchOperators(before, now);
    expect(match.pairs.map(([n, b]) => [n.nodeId, b.nodeId])).toEqual([[0, 0], [1, 1], [2, 3], [3, 4]]);
    expect(match.notRestored.map((r) => r.name)).toEqual(['totals']);
  });

  it('does not count stateless operators the job no longer has', () => {
    expect(matchOperators([op(0, 'src'), op(1, 'Filter', {}, false)], [op(0, 'src')]).notRestored).toEqual([]);
  });
});

describe('checkOperatorMatch', () => {
  it('refuses another window size, naming the operator and both values', () => {
    const before = [op(2, 'account totals', { operator: 'window', assigner: 'tumbling', sizeMs: 10_000 })];
    const now = [op(2, 'account totals', { operator: 'window', assigner: 'tumbling', sizeMs: 20_000 })];
    const check = () => checkOperatorMatch(matchOperators(before, now), opts);
    expect(check).toThrow(ConfigError);
    expect(check).toThrow(
      'cannot restore checkpoint 3 in ck: its state does not fit the job\'s operators:\n' +
        '  operator "account totals": window size 10000 ms in the checkpoint, 20000 ms in the job\n' +
        'restore it with the settings of the job that wrote it, or start without this state (--fresh)',
    );
  });

  it('refuses another accumulator shape and another state version', () => {
    const before = [op(1, 'sum', { accumulator: 'object {count, total}' }), op(2, 'p', { operator: 'keyed process', stateVersion: 1 })];
    const now = [op(1, 'sum', { accumulator: 'string' }), op(2, 'p', { operator: 'keyed process', stateVersion: 2 })];
    expect(() => checkOperatorMatch(matchOperators(before, now), opts)).toThrow(
      /operator "sum": accumulator object \{count, total\} in the checkpoint, string in the job\n  operator "p": state version \(stateVersion\) 1 in the checkpoint, 2 in the job/,
    );
  });

  it('refuses to drop the state of a removed operator unless allowed, then warns', () => {
    const match = matchOperators([op(0, 'src', { operator: 'source' }), op(1, 'late totals', { operator: 'window' })], [op(0, 'src', { operator: 'source' })]);
    expect(() => checkOperatorMatch(match, opts)).toThrow(
      /it has state of operators the job no longer has: "late totals" \(window\)\. Pass --allow-non-restored-state/,
    );
    expect(checkOperatorMatch(match, { ...opts, allowNonRestoredState: true })).toEqual([
      'warning: --allow-non-restored-state: dropping the state of "late totals" (window) from checkpoint 3 in ck',
    ]);
  });

  it('ignores the meaning of operators that keep no state', () => {
    expect(checkOperatorMatch(matchOperators([op(1, 'm', { x: 1 }, false)], [op(1, 'm', { x: 2 }, false)]), opts)).toEqual([]);
  });
});

describe('meaningDifferences', () => {
  it('says "unset" for a property one side lacks', () => {
    expect(meaningDifferences({ a: 'x' }, { a: 'x', stateVersion: 3 })).toEqual(['state version (stateVersion) unset in the checkpoint, 3 in the job']);
  });
});
