import { describe, expect, it } from 'vitest';
import { ConfigError, InternalError } from '../../../lib/core/index.ts';
import { StreamEnvironment, collectSink } from '../../../lib/index.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { placementOf, placementTable, roundRobinPlacement, workerThreadCount } from '../../../lib/runtime/placement.ts';
import { ThreadChannelFactory } from '../../../lib/runtime/channels/thread-channel-factory.ts';

function planAt(parallelism: number) {
  const env = new StreamEnvironment({ parallelism });
  env.fromCollection([1, 2, 3]).map((x) => x + 1).sinkTo(collectSink<number>());
  return buildPhysicalPlan(env.graph, env.options);
}

describe('placement', () => {
  it('puts subtask s of every vertex on worker s % workers', () => {
    const placement = roundRobinPlacement(3);
    expect([0, 1, 2, 3, 4, 7].map((subtask) => placement({ vertex: 5, subtask }))).toEqual([0, 1, 2, 0, 1, 1]);
    expect(() => roundRobinPlacement(0)).toThrow(ConfigError);
  });

  it('writes a placement out per task and reads it back the same', () => {
    const plan = planAt(5);
    const shifted = (task: { vertex: number; subtask: number }) => (task.vertex + task.subtask) % 2;
    const table = placementTable(plan, shifted);
    expect(table).toHaveLength(plan.vertices.length);
    const back = placementOf(JSON.parse(JSON.stringify(table)) as number[][]);
    for (const v of plan.vertices) {
      for (let subtask = 0; subtask < v.parallelism; subtask++) expect(back({ vertex: v.id, subtask })).toBe(shifted({ vertex: v.id, subtask }));
    }
    expect(() => back({ vertex: 0, subtask: 99 })).toThrow(InternalError);
  });

  it('runs on one thread per processor by default, never more threads than the highest parallelism', () => {
    expect(workerThreadCount(planAt(100), 2)).toBe(2);
    expect(workerThreadCount(planAt(3), 8)).toBe(3);
    expect(workerThreadCount(planAt(100), 2, 7)).toBe(7);
    expect(workerThreadCount(planAt(4), 2, 50)).toBe(4);
    expect(workerThreadCount(planAt(4), 0)).toBe(1);
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => workerThreadCount(planAt(4), 2, bad)).toThrow(ConfigError);
  });
});

describe('thread channel factory', () => {
  const spec = (producerWorker: number, consumerWorker: number) => ({
    key: '0:0:1',
    producer: { vertex: 0, subtask: 0 },
    consumer: { vertex: 1, subtask: 1 },
    producerWorker,
    consumerWorker,
  });

  it('gives both ends of a channel within its worker the same in-memory queue', () => {
    const factory = new ThreadChannelFactory(1, new Map(), 8);
    expect(factory.sender(spec(1, 1))).toBe(factory.receiver(spec(1, 1)));
  });

  it('refuses an end that runs on another worker, and a cross-worker channel it has no port for', () => {
    const factory = new ThreadChannelFactory(0, new Map(), 8);
    expect(() => factory.sender(spec(1, 0))).toThrow(InternalError);
    expect(() => factory.receiver(spec(0, 1))).toThrow(InternalError);
    expect(() => factory.sender(spec(0, 1))).toThrow(/no port for channel 0:0:1 on thread 0/);
  });
});
