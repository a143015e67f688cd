import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { StreamEnvironment, collectSink, runInThisThread, systemClock } from '../../../lib/index.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { computeSplits } from '../../../lib/runtime/in-thread-runner.ts';
import { deployTasks, staticSplitEnumerator, verticesOn } from '../../../lib/runtime/task-deployment.ts';
import { crossWorkerChannels, channelsOf } from '../../../lib/runtime/channel-wiring.ts';
import { ThreadChannelFactory } from '../../../lib/runtime/channels/thread-channel-factory.ts';
import { NO_CHECKPOINTS } from '../../../lib/runtime/checkpoint-driver/participant.ts';
import { memoryServices } from '../../../lib/runtime/default-services.ts';
import { runTasks } from '../../../lib/runtime/run-tasks.ts';
import type { Placement } from '../../../lib/runtime/placement.ts';

type Row = { key: string; n: number };

function buildJob(parallelism: number) {
  const env = new StreamEnvironment({ parallelism, batchSize: 5 });
  const sink = collectSink<string>();
  env
    .fromCollection(Array.from({ length: 600 }, (_, i): Row => ({ key: `k${i % 13}`, n: i })))
    .map((r) => ({ ...r, n: r.n * 2 }))
    .keyBy((r) => r.key)
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }))
    .map((r) => `${r.key}:${r.n}`)
    .sinkTo(sink);
  return { env, sink };
}

/** Deploys the job on `workers` workers of this thread, placed by `placement`, with MessagePorts between them. */
async function runPlaced(parallelism: number, workers: number, placement: Placement): Promise<{ lines: string[]; crossing: number; perWorker: number[] }> {
  const { env, sink } = buildJob(parallelism);
  env.validate();
  const plan = buildPhysicalPlan(env.graph, env.options);
  const splits = await computeSplits(plan);
  const ports = Array.from({ length: workers }, () => new Map<string, MessagePort>());
  const crossing = crossWorkerChannels(plan, placement);
  for (const ch of crossing) {
    const { port1, port2 } = new MessageChannel();
    ports[ch.producerWorker]!.set(ch.key, port1);
    ports[ch.consumerWorker]!.set(ch.key, port2);
  }
  const services = memoryServices(() => 0);
  const deployed = ports.map((p, worker) =>
    deployTasks({
      plan,
      options: env.options,
      worker,
      placement,
      channels: new ThreadChannelFactory(worker, p, env.options.channelCapacity),
      splits: staticSplitEnumerator(plan, splits),
      services,
      clock: systemClock,
      checkpoints: NO_CHECKPOINTS,
      fencing: { attempt: 0, epoch: 1 },
    }),
  );
  try {
    await runTasks(deployed.flat());
  } finally {
    for (const p of ports) for (const port of p.values()) port.close();
  }
  return { lines: [...sink.values], crossing: crossing.length, perWorker: deployed.map((t) => t.length) };
}

describe('deployTasks with a placement and a channel factory', () => {
  it('runs every task exactly once on the worker the placement names, with the output of one worker', async () => {
    const { env, sink } = buildJob(1);
    await runInThisThread(env);
    const reference = [...sink.values].sort();
    expect(reference.length).toBe(600);

    // Not "subtask i on worker i": the vertex shifts the worker, so forward edges cross workers too.
    const shifted: Placement = (task) => (task.vertex + task.subtask) % 2;
    const placed = await runPlaced(4, 2, shifted);
    expect(placed.lines.sort()).toEqual(reference);
    expect(placed.crossing).toBeGreaterThan(0);
    const { env: env4 } = buildJob(4);
    const plan = buildPhysicalPlan(env4.graph, env4.options);
    const tasks = plan.vertices.reduce((n, v) => n + v.parallelism, 0);
    expect(placed.perWorker.reduce((a, b) => a + b, 0)).toBe(tasks);
    expect(placed.perWorker.every((n) => n > 0)).toBe(true);

    // Everything on one of two workers: the other deploys nothing, and no channel crosses.
    const allOnOne = await runPlaced(4, 2, () => 1);
    expect(allOnOne.lines.sort()).toEqual(reference);
    expect(allOnOne.crossing).toBe(0);
    expect(allOnOne.perWorker).toEqual([0, tasks]);
  });

  it('lists each channel once with the workers of its ends, and the vertices each worker runs', () => {
    const { env } = buildJob(3);
    const plan = buildPhysicalPlan(env.graph, env.options);
    const placement: Placement = (task) => task.subtask % 2;
    const all = channelsOf(plan, placement);
    expect(new Set(all.map((c) => c.key)).size).toBe(all.length);
    for (const c of all) {
      expect(c.producerWorker).toBe(placement(c.producer));
      expect(c.consumerWorker).toBe(placement(c.consumer));
    }
    expect(crossWorkerChannels(plan, placement).every((c) => c.producerWorker !== c.consumerWorker)).toBe(true);
    const byVertex = (v: number) => plan.vertices[v]!.parallelism;
    expect([...verticesOn(plan, placement, 1)].sort()).toEqual(plan.vertices.filter((v) => byVertex(v.id) > 1).map((v) => v.id).sort());
    expect([...verticesOn(plan, () => 0, 1)]).toEqual([]);
  });
});
