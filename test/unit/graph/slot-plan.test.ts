import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { compileJobOptions } from '../../../lib/contracts/job-options.ts';
import type { Sink } from '../../../lib/connectors/sink.ts';
import type { Source } from '../../../lib/connectors/source.ts';
import { LogicalGraph, type LogicalEdge, type PartitionerSpec } from '../../../lib/graph/logical-graph.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { planSlots } from '../../../lib/graph/slot-plan.ts';
import type { Operator } from '../../../lib/operators/operator.ts';

function source(options: { bounded?: boolean; aligned?: boolean; maxParallelism?: number; name?: string } = {}): Source<unknown> {
  return {
    name: options.name ?? 'kinesis',
    bounded: options.bounded ?? false,
    ...(options.aligned === true ? { supportsKeyGroupAlignment: true } : {}),
    ...(options.maxParallelism === undefined ? {} : { maxParallelism: options.maxParallelism }),
    createSplits: () => [],
    createReader: () => {
      throw new ConfigError('not read in these tests');
    },
  };
}

const noOperator = (): Operator<unknown, unknown> => {
  throw new ConfigError('not run in these tests');
};

function sink2pc(externalCommit?: { kind: string; table?: string }): Sink<unknown> {
  return {
    name: 'ddb',
    twoPhaseCommit: true,
    ...(externalCommit === undefined ? {} : { externalCommit }),
    createWriter: noOperator,
    createCommitter: noOperator,
    cleanUpDangling() {},
  } as unknown as Sink<unknown>;
}

const plainSink: Sink<unknown> = { name: 'print', createWriter: noOperator } as unknown as Sink<unknown>;

const edge = (from: number, partitioner?: PartitionerSpec): LogicalEdge => ({ from, sideTag: undefined, partitioner, inputIndex: 0 });
const kinesisHash: PartitionerSpec = { kind: 'hash', keySelector: (v) => String(v), keyGroupHash: 'kinesis-hash' };
const murmurHash: PartitionerSpec = { kind: 'hash', keySelector: (v) => String(v) };

interface Pipeline {
  source?: Source<unknown>;
  /** Operators between the source and the keyBy. */
  before?: { name: string; keyed?: boolean }[];
  partitioner?: PartitionerSpec;
  sink?: Sink<unknown>;
  keyedParallelism?: number;
}

/** source -> [before...] -> keyBy(partitioner) -> keyed "Count" -> sink */
function plan(p: Pipeline, parallelism = 4, maxParallelism = 128): PhysicalPlan {
  const graph = new LogicalGraph();
  let last = graph.addSource('Kinesis', p.source ?? source({ aligned: true }), undefined).id;
  for (const op of p.before ?? []) last = graph.addOperator(op.name, noOperator, [edge(last)], { keyed: op.keyed ?? false }).id;
  const count = graph.addOperator('Count', noOperator, [edge(last, p.partitioner ?? kinesisHash)], {
    keyed: true,
    ...(p.keyedParallelism === undefined ? {} : { parallelism: p.keyedParallelism }),
  });
  graph.addOperator('Sink', noOperator, [edge(count.id)], { isSink: true, sink: p.sink ?? sink2pc({ kind: 'dynamodb', table: 't' }) });
  return buildPhysicalPlan(graph, compileJobOptions({ parallelism, maxParallelism }));
}

function configError(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new ConfigError('expected a ConfigError');
}

describe('planSlots', () => {
  it('lays P slots over the key groups, with tasks, source tasks and 2PC sinks', () => {
    const result = planSlots(plan({}, 4), { parallelism: 4 });
    expect(result.slots).toEqual([
      { slot: 0, keyGroups: [0, 31] },
      { slot: 1, keyGroups: [32, 63] },
      { slot: 2, keyGroups: [64, 95] },
      { slot: 3, keyGroups: [96, 127] },
    ]);
    expect(result.parallelism).toBe(4);
    expect(result.maxParallelism).toBe(128);
    expect(result.tasks).toHaveLength(8);
    expect(result.sourceTasks).toEqual([0, 1, 2, 3].map((subtask) => ({ vertex: 0, subtask })));
    expect(result.sinks).toEqual([{ nodeId: 2, name: 'Sink', externalCommit: { kind: 'dynamodb', table: 't' } }]);
  });

  it('key-group ranges cover every key group exactly once for uneven splits', () => {
    const result = planSlots(plan({}, 3, 10), { parallelism: 3 });
    const covered = result.slots.flatMap((s) => Array.from({ length: s.keyGroups[1] - s.keyGroups[0] + 1 }, (_, i) => s.keyGroups[0] + i));
    expect(covered).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('edge modes: kinesis-hash behind an aligning source and stateless operators is aligned, forward is local', () => {
    const result = planSlots(plan({ before: [{ name: 'Parse' }, { name: 'Filter' }] }, 2), { parallelism: 2 });
    expect(result.edges).toEqual([
      { id: '0', fromVertex: 0, toVertex: 1, mode: 'aligned', keyGroupHash: 'kinesis-hash' },
    ]);
    // Count -> Sink is chained (forward, no edge); a forward edge between vertices is local:
    const graph = new LogicalGraph();
    const src = graph.addSource('Kinesis', source(), undefined).id;
    graph.addOperator('A', noOperator, [edge(src)]);
    graph.addOperator('B', noOperator, [edge(src)]);
    const forward = planSlots(buildPhysicalPlan(graph, compileJobOptions({ parallelism: 2 })), { parallelism: 2 });
    expect(forward.edges.map((e) => e.mode)).toEqual(['local', 'local']);
  });

  it('murmur keyBy, rebalance and broadcast go through the exchange stream', () => {
    for (const partitioner of [murmurHash, { kind: 'rebalance' } as const, { kind: 'broadcast' } as const]) {
      const result = planSlots(plan({ partitioner }, 2), { parallelism: 2, exchangeStream: 'x' });
      expect(result.edges.map((e) => e.mode)).toEqual(['exchange']);
    }
    expect(planSlots(plan({ partitioner: murmurHash }, 2), { parallelism: 2, exchangeStream: 'x' }).edges[0]?.keyGroupHash).toBe('murmur');
  });

  it('an exchange edge without an exchange stream names the edge and --exchange-stream', () => {
    const message = configError(() => planSlots(plan({ partitioner: murmurHash }, 2), { parallelism: 2 }));
    expect(message).toContain('edge 0 ("Kinesis" -> "Count -> Sink", hash)');
    expect(message).toContain('--exchange-stream');
  });

  it('kinesis-hash that cannot be aligned says why', () => {
    expect(configError(() => planSlots(plan({ source: source({ aligned: false, name: 'files' }) }, 2), { parallelism: 2, exchangeStream: 'x' }))).toMatch(
      /kinesis-hash' but cannot be aligned: its source "Kinesis" cannot read a range/,
    );
    expect(
      configError(() => planSlots(plan({ before: [{ name: 'Dedup', keyed: true }] }, 2), { parallelism: 2, exchangeStream: 'x' })),
    ).toContain('cannot be aligned: operator "Dedup" between the source and the keyBy keeps state');
    // A kinesis-hash keyBy behind another keyed vertex (no source at the head of its vertex):
    const graph = new LogicalGraph();
    const src = graph.addSource('Kinesis', source({ aligned: true }), undefined).id;
    const first = graph.addOperator('First', noOperator, [edge(src, murmurHash)], { keyed: true }).id;
    graph.addOperator('Second', noOperator, [edge(first, kinesisHash)], { keyed: true });
    const message = configError(() => planSlots(buildPhysicalPlan(graph, compileJobOptions({ parallelism: 2 })), { parallelism: 2, exchangeStream: 'x' }));
    expect(message).toContain('edge 1 ("First" -> "Second", hash)');
    expect(message).toContain('does not start with a source');
  });

  it('a stateful operator chained between the source and the keyBy blocks alignment', () => {
    const graph = new LogicalGraph();
    const src = graph.addSource('Kinesis', source({ aligned: true }), undefined).id;
    const audit = graph.addOperator('Audit', noOperator, [edge(src)], { isSink: true, sink: plainSink }).id;
    void audit;
    const map = graph.addOperator('Map', noOperator, [edge(src)]).id;
    graph.addOperator('Count', noOperator, [edge(map, kinesisHash)], { keyed: true });
    // Audit and Map both read the source: neither chains, so "Map" heads its own vertex without a source.
    const message = configError(() => planSlots(buildPhysicalPlan(graph, compileJobOptions({ parallelism: 2 })), { parallelism: 2 }));
    expect(message).toContain('"Map" does not start with a source');
  });

  it('a vertex at another parallelism is named with the fix', () => {
    const message = configError(() => planSlots(plan({ keyedParallelism: 2, partitioner: murmurHash }, 4), { parallelism: 4, exchangeStream: 'x' }));
    expect(message).toContain('vertex "Count" runs at parallelism 2, not the cluster\'s 4');
    expect(message).toContain('setParallelism(2)');
  });

  it('a source capped below P is named with its cap', () => {
    const message = configError(() => planSlots(plan({ source: source({ aligned: true, maxParallelism: 1 }) }, 3), { parallelism: 3 }));
    expect(message).toContain('vertex "Kinesis" runs at parallelism 1');
    expect(message).toContain('at most 1 subtasks');
  });

  it('a bounded source is refused by name', () => {
    expect(configError(() => planSlots(plan({ source: source({ bounded: true, aligned: true }) }, 4), { parallelism: 4 }))).toContain(
      'source "Kinesis" is bounded',
    );
  });

  it('a two-phase-commit sink without externalCommit is refused by name; other sinks are not listed', () => {
    expect(configError(() => planSlots(plan({ sink: sink2pc() }, 4), { parallelism: 4 }))).toContain(
      'sink "Sink" commits in two phases but has no externalCommit',
    );
    expect(planSlots(plan({ sink: plainSink }, 4), { parallelism: 4 }).sinks).toEqual([]);
  });

  it('P must be a positive integer no larger than maxParallelism', () => {
    expect(configError(() => planSlots(plan({}, 2, 2), { parallelism: 4 }))).toContain('above maxParallelism 2');
    expect(configError(() => planSlots(plan({}, 4), { parallelism: 0 }))).toContain('positive integer');
  });

  it('the fingerprint is stable for the same plan and changes with P, maxParallelism, edge modes and hashes', () => {
    const base = planSlots(plan({}, 4), { parallelism: 4 }).fingerprint;
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(planSlots(plan({}, 4), { parallelism: 4 }).fingerprint).toBe(base);
    // The exchange stream's name is deployment, not plan: it does not change an aligned plan's fingerprint.
    expect(planSlots(plan({}, 4), { parallelism: 4, exchangeStream: 'x' }).fingerprint).toBe(base);
    const others = [
      planSlots(plan({}, 2), { parallelism: 2 }).fingerprint,
      planSlots(plan({}, 4, 256), { parallelism: 4 }).fingerprint,
      planSlots(plan({ partitioner: murmurHash }, 4), { parallelism: 4, exchangeStream: 'x' }).fingerprint,
      planSlots(plan({ partitioner: { kind: 'rebalance' } }, 4), { parallelism: 4, exchangeStream: 'x' }).fingerprint,
      planSlots(plan({ before: [{ name: 'Parse' }] }, 4), { parallelism: 4 }).fingerprint,
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });
});
