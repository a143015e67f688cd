import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import type { SourceSplit } from '../../../lib/connectors/source.ts';
import { StaticSplitEnumerator } from '../../../lib/connectors/split-enumerator.ts';
import { splitsOfSubtask } from '../../../lib/connectors/split-assignment.ts';

const splits: SourceSplit[] = Array.from({ length: 7 }, (_, i) => ({ id: `s${i}` }));

describe('static split enumerator', () => {
  it('assigns each subtask the splits splitsOfSubtask gives it (round-robin, or the source own subtaskOf)', async () => {
    const roundRobin = { name: 'rr', subtaskOf: undefined };
    const byLastDigit = { name: 'own', subtaskOf: (split: SourceSplit, parallelism: number) => Number(split.id.slice(1)) % 2 === 0 ? 0 : parallelism - 1 };
    const enumerator = new StaticSplitEnumerator([
      { vertex: 0, source: roundRobin, parallelism: 3, splits },
      { vertex: 2, source: byLastDigit, parallelism: 3, splits },
    ]);
    for (let subtask = 0; subtask < 3; subtask++) {
      expect(await enumerator.assignedSplits(0, subtask)).toEqual(splitsOfSubtask(roundRobin, splits, 3, subtask));
      expect(await enumerator.assignedSplits(2, subtask)).toEqual(splitsOfSubtask(byLastDigit, splits, 3, subtask));
    }
    expect((await enumerator.assignedSplits(0, 0)).map((s) => s.id)).toEqual(['s0', 's3', 's6']);
    expect((await enumerator.assignedSplits(2, 1)).map((s) => s.id)).toEqual([]);
    // Every split has exactly one owner.
    const owned = (await Promise.all([0, 1, 2].map((s) => enumerator.assignedSplits(2, s)))).flat().map((s) => s.id).sort();
    expect(owned).toEqual(splits.map((s) => s.id).sort());
    // A vertex without splits (not a source) gets none.
    expect(await enumerator.assignedSplits(1, 0)).toEqual([]);
  });

  it('fails when it is built, as a configuration error, on a source that assigns a split outside its subtasks', () => {
    const bad = { name: 'bad', subtaskOf: () => 5 };
    expect(() => new StaticSplitEnumerator([{ vertex: 0, source: bad, parallelism: 2, splits }])).toThrow(ConfigError);
  });
});
