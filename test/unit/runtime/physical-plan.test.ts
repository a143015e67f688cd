import { describe, expect, it } from 'vitest';
import { StreamEnvironment, collectSink, ConfigError } from '../../../lib/index.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';

function plan(env: StreamEnvironment) {
  return buildPhysicalPlan(env.graph, env.options);
}

describe('physical plan', () => {
  it('chains forward operators of equal parallelism into one vertex', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    env.fromCollection([1, 2, 3]).map((x) => x + 1).filter((x) => x > 1).sinkTo(collectSink());
    const p = plan(env);
    // The collection source has parallelism 1, so map (parallelism 2) gets a rebalance edge.
    expect(p.vertices.map((v) => [v.name, v.parallelism])).toEqual([
      ['Collection', 1],
      ['Map -> Filter -> collect', 2],
    ]);
    expect(p.edges).toHaveLength(1);
    expect(p.edges[0]!.partitioner.kind).toBe('rebalance');
  });

  it('breaks chains at keyBy and at operators with several consumers', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const mapped = env.fromCollection([1, 2, 3]).setParallelism(1).map((x) => x).setParallelism(1);
    mapped.keyBy((x) => x).process({ processElement() {} }).sinkTo(collectSink('a'));
    mapped.sinkTo(collectSink('b')).setParallelism(1);
    const p = plan(env);
    expect(p.vertices.map((v) => v.name)).toEqual(['Collection -> Map', 'KeyedProcess -> a', 'b']);
    expect(p.edges.map((e) => e.partitioner.kind)).toEqual(['hash', 'forward']);
  });

  it('refuses forward partitioning between different parallelism', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    env.fromCollection([1]).forward().map((x) => x).sinkTo(collectSink());
    expect(() => plan(env)).toThrow(ConfigError);
    expect(() => plan(env)).toThrow(/forward partitioning .* needs equal parallelism/);
  });

  it('refuses keyed parallelism above maxParallelism', () => {
    const env = new StreamEnvironment({ parallelism: 1, maxParallelism: 4 });
    const keyed = env.fromCollection([1]).keyBy((x) => x).process({ processElement() {} });
    env.graph.node(keyed.nodeId).parallelism = 8;
    keyed.sinkTo(collectSink());
    expect(() => plan(env)).toThrow(/above maxParallelism 4/);
  });

  it('gives the same fingerprint for the same job and another for a different one', () => {
    const build = (p: number) => {
      const env = new StreamEnvironment({ parallelism: p });
      env.fromCollection([1]).map((x) => x).sinkTo(collectSink());
      return plan(env).fingerprint;
    };
    expect(build(2)).toBe(build(2));
    expect(build(2)).not.toBe(build(3));
  });
});
