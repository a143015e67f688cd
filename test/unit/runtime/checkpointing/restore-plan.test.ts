import { describe, expect, it } from 'vitest';
import { ConfigError, StreamEnvironment, TumblingEventTimeWindows, collectSink, generatorSource, keyGroupOf } from '../../../../lib/index.ts';
import { operatorStateRecords } from '../../../../lib/graph/operator-records.ts';
import { buildPhysicalPlan } from '../../../../lib/graph/physical-plan.ts';
import { checkCompatible, operatorOrigins, restoredTask, type RestoredJob } from '../../../../lib/runtime/restore/restore-plan.ts';
import type { CheckpointMetadata } from '../../../../lib/checkpoint/types.ts';
import type { TaskSnapshot } from '../../../../lib/storage/task-snapshot.ts';
import { keyGroupRangeForSubtask } from '../../../../lib/core/index.ts';

function plan(parallelism: number, maxParallelism = 16) {
  const env = new StreamEnvironment({ parallelism, maxParallelism });
  env
    .fromSource(generatorSource({ count: 10 }))
    .keyBy((t) => t.account)
    .process({ processElement() {} })
    .sinkTo(collectSink());
  return buildPhysicalPlan(env.graph, env.options);
}

/** A checkpoint of `plan(2)`: two source subtasks with 3 splits in total, two keyed subtasks, operator-state items. */
function checkpointAtParallelism2(): RestoredJob {
  const p = plan(2);
  const keyedNode = p.vertices[1]!.chain[0]!.id;
  const sinkNode = p.vertices[1]!.chain[1]!.id;
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
  const keyed = (subtask: number) => {
    const range = keyGroupRangeForSubtask(subtask, 2, 16);
    const groups = new Map<number, [string, string, number][]>();
    for (const k of keys) {
      const kg = keyGroupOf(k, 16);
      if (kg < range.start || kg > range.end) continue;
      groups.set(kg, [...(groups.get(kg) ?? []), [k, '', Number(k.slice(1))]]);
    }
    return { maxParallelism: 16, keyGroups: [...groups].map(([keyGroup, entries]) => ({ keyGroup, states: { count: entries } })) };
  };
  const sources: TaskSnapshot[] = [0, 1].map((subtask) => ({
    vertex: 0,
    subtask,
    sourceSplits: subtask === 0 ? [{ id: 's0' }, { id: 's2' }] : [{ id: 's1' }],
    operators: [],
  }));
  const windows: TaskSnapshot[] = [0, 1].map((subtask) => ({
    vertex: 1,
    subtask,
    operators: [
      { nodeId: keyedNode, keyed: keyed(subtask), timers: [], watermark: 100 + subtask },
      { nodeId: sinkNode, operatorState: [`c${subtask}a`, `c${subtask}b`], watermark: 100 + subtask },
    ],
  }));
  const metadata: CheckpointMetadata = {
    version: 1,
    checkpointId: 7,
    savepoint: false,
    triggeredAt: 0,
    completedAt: 1,
    maxParallelism: 16,
    parallelism: { 0: 2, 1: 2 },
    tasks: [],
  };
  const noSharedFiles = {
    put: () => Promise.reject(new Error('a plain snapshot has no shared files')),
    get: () => Promise.reject(new Error('a plain snapshot has no shared files')),
  };
  return { checkpointId: 7, metadata, snapshots: new Map([[0, sources], [1, windows]]), origins: operatorOrigins(metadata, p), sharedState: noSharedFiles };
}

describe('restore plan', () => {
  it('keeps each subtask its own state at the same parallelism', () => {
    const job = checkpointAtParallelism2();
    const p = plan(2);
    const t1 = restoredTask(job, p.vertices[1]!, 1)!;
    const keyedNode = p.vertices[1]!.chain[0]!.id;
    expect(t1.operators.get(keyedNode)!.watermark).toBe(101);
    expect(restoredTask(job, p.vertices[0]!, 0)!.splits!.map((s) => s.id)).toEqual(['s0', 's1']);
  });

  it('starts the chained operators of a source subtask from the lowest watermark: its splits are dealt anew', () => {
    const env = new StreamEnvironment({ parallelism: 2, maxParallelism: 16 });
    env
      .fromSource(generatorSource({ count: 10 }))
      .map((t) => t)
      .keyBy((t) => t.account)
      .process({ processElement() {} })
      .sinkTo(collectSink());
    const p = buildPhysicalPlan(env.graph, env.options);
    const sourceVertex = p.vertices[0]!;
    const chained = sourceVertex.chain[0]!.id;
    // Subtask 0 had read all its splits (its chain saw the final watermark); subtask 1 was still reading s1.
    const sources: TaskSnapshot[] = [
      { vertex: 0, subtask: 0, sourceSplits: [], operators: [{ nodeId: chained, watermark: Number.POSITIVE_INFINITY }] },
      { vertex: 0, subtask: 1, sourceSplits: [{ id: 's1' }], operators: [{ nodeId: chained, watermark: 600 }] },
    ];
    const job = checkpointAtParallelism2();
    const origins = new Map([
      [sourceVertex.source!.id, { nodeId: sourceVertex.source!.id, vertex: 0 }],
      [chained, { nodeId: chained, vertex: 0 }],
    ]);
    const restored: RestoredJob = { ...job, snapshots: new Map([...job.snapshots, [0, sources]]), origins };
    const t0 = restoredTask(restored, sourceVertex, 0)!;
    expect(t0.splits!.map((s) => s.id)).toEqual(['s1']);
    expect(t0.operators.get(chained)!.watermark).toBe(600);
    expect(restoredTask(restored, sourceVertex, 1)!.operators.get(chained)!.watermark).toBe(600);
  });

  it('redistributes at parallelism 3: every key group once, splits and operator state round-robin, lowest watermark', () => {
    const job = checkpointAtParallelism2();
    const p = plan(3);
    const keyedNode = p.vertices[1]!.chain[0]!.id;
    const sinkNode = p.vertices[1]!.chain[1]!.id;
    const tasks = [0, 1, 2].map((s) => restoredTask(job, p.vertices[1]!, s)!);
    // Each new subtask gets every old snapshot; the backend keeps the key groups of its own range.
    for (const t of tasks) expect(t.operators.get(keyedNode)!.keyed).toHaveLength(2);
    expect(tasks.map((t) => t.operators.get(keyedNode)!.watermark)).toEqual([100, 100, 100]);
    expect(tasks.flatMap((t) => t.operators.get(sinkNode)!.items).sort()).toEqual(['c0a', 'c0b', 'c1a', 'c1b']);
    const splits = [0, 1, 2].map((s) => restoredTask(job, p.vertices[0]!, s)!.splits!.map((x) => x.id));
    expect(splits.flat().sort()).toEqual(['s0', 's1', 's2']);
    expect(splits.every((x) => x.length === 1)).toBe(true);
  });

  it('refuses another maxParallelism and another job graph with ConfigError', () => {
    const job = checkpointAtParallelism2();
    expect(() => checkCompatible(job.metadata, plan(2, 32), 'dir')).toThrow(ConfigError);
    expect(() => checkCompatible(job.metadata, plan(2, 32), 'dir')).toThrow(/maxParallelism 16 .* now has 32/);
    const other = { ...job.metadata, tasks: [{ task: { vertex: 1, subtask: 0 }, vertexName: 'Something else', path: 'x', bytes: 1, sha256: 'a' }] };
    expect(() => checkCompatible(other, plan(2), 'dir')).toThrow(/belongs to another job graph/);
  });

  it('refuses a checkpoint whose window operator had another size or accumulator, naming the operator', () => {
    const windowed = (sizeMs: number, accumulator: () => unknown) => {
      const env = new StreamEnvironment({ parallelism: 1, maxParallelism: 16 });
      env
        .fromSource(generatorSource({ count: 10 }))
        .keyBy((t) => t.account)
        .window(TumblingEventTimeWindows.of(sizeMs))
        .aggregate({ createAccumulator: accumulator, add: (_t, a) => a, getResult: (a) => a, merge: (a) => a }, (v) => v, 'account totals')
        .sinkTo(collectSink());
      return buildPhysicalPlan(env.graph, env.options);
    };
    const written = windowed(10_000, () => ({ count: 0, total: 0 }));
    const metadata = { ...checkpointAtParallelism2().metadata, parallelism: { 0: 1, 1: 1 }, operators: operatorStateRecords(written) };
    expect(() => checkCompatible(metadata, windowed(10_000, () => ({ count: 0, total: 0 })), 'dir')).not.toThrow();
    expect(() => checkCompatible(metadata, windowed(20_000, () => ({ count: 0, total: 0 })), 'dir')).toThrow(
      /cannot restore checkpoint 7 in dir: .*\n  operator "account totals": window size 10000 ms in the checkpoint, 20000 ms in the job\n/,
    );
    expect(() => checkCompatible(metadata, windowed(10_000, () => ''), 'dir')).toThrow(
      /operator "account totals": accumulator object \{count, total\} in the checkpoint, string in the job/,
    );
  });

  it('finds each operator`s state by name when an operator before it was removed (its node id changed)', () => {
    const build = (withFilter: boolean) => {
      const env = new StreamEnvironment({ parallelism: 2, maxParallelism: 16 });
      let stream = env.fromSource(generatorSource({ count: 10 }));
      if (withFilter) stream = stream.keyBy((t) => t.account).process({ processElement() {} }, 'dedup');
      stream.keyBy((t) => t.account).process({ processElement() {} }, 'counts').sinkTo(collectSink());
      return buildPhysicalPlan(env.graph, env.options);
    };
    const job = checkpointAtParallelism2();
    const before = build(true);
    const countsBefore = before.vertices.flatMap((v) => v.chain).find((n) => n.name === 'counts')!;
    const countsVertex = before.vertices.find((v) => v.chain.includes(countsBefore))!;
    // The fixture's keyed snapshot becomes the state of "counts" in the job that had "dedup" before it.
    const snapshots = new Map([
      [0, job.snapshots.get(0)!],
      [countsVertex.id, job.snapshots.get(1)!.map((t) => ({ ...t, vertex: countsVertex.id, operators: t.operators.map((o, i) => ({ ...o, nodeId: i === 0 ? countsBefore.id : o.nodeId })) }))],
    ]);
    const metadata = { ...job.metadata, parallelism: Object.fromEntries(before.vertices.map((v) => [v.id, 2])), operators: operatorStateRecords(before) };
    const after = build(false);
    expect(() => checkCompatible(metadata, after, 'dir')).toThrow(/state of operators the job no longer has: "dedup" \(keyed process\)/);
    const logs: string[] = [];
    checkCompatible(metadata, after, 'dir', { allowNonRestoredState: true, log: (l) => logs.push(l) });
    expect(logs).toEqual(['warning: --allow-non-restored-state: dropping the state of "dedup" (keyed process) from checkpoint 7 in dir']);
    const countsAfter = after.vertices.flatMap((v) => v.chain).find((n) => n.name === 'counts')!;
    expect(countsAfter.id).not.toBe(countsBefore.id);
    const restored: RestoredJob = { ...job, metadata, snapshots, origins: operatorOrigins(metadata, after) };
    const vertex = after.vertices.find((v) => v.chain.includes(countsAfter))!;
    expect(restoredTask(restored, vertex, 0)!.operators.get(countsAfter.id)!.keyed).toHaveLength(2);
    expect(restoredTask(restored, after.vertices[0]!, 0)!.splits!.map((x) => x.id)).toEqual(['s0', 's1']);
  });
});
