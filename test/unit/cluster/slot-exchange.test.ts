import { describe, expect, it } from 'vitest';
import type { ClusterEdgeConfig } from '../../../lib/cluster/control-items.ts';
import type {
  CompletedCheckpoint,
  ExchangeBatch,
  ExchangeReceiverInput,
  ExchangeReceiverSnapshot,
  ExchangeSender,
  ExchangeSenderSnapshot,
  ExchangeTransport,
  ReleasedBatch,
} from '../../../lib/cluster/exchange/index.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { StreamEnvironment } from '../../../lib/index.ts';
import { SlotExchange } from '../../../lib/runtime/cluster/slot-exchange.ts';
import { coordinatorSink, feedSource, Feeds, MAX_P, P } from './slot-fixtures.ts';

/** A receiver whose released runs the test sets, and whose snapshot names how many runs were taken. */
class ScriptedReceiver implements ExchangeReceiverInput {
  released: ReleasedBatch[] = [];
  taken = 0;
  completions: CompletedCheckpoint[] = [];
  poll(max = Number.POSITIVE_INFINITY): ReleasedBatch[] {
    const out = this.released.splice(0, max);
    this.taken += out.length;
    return out;
  }
  whenReady(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
  }
  checkpointCompleted(c: CompletedCheckpoint): void {
    this.completions.push(c);
  }
  snapshot(): ExchangeReceiverSnapshot {
    return { shards: [{ shardId: 's', producers: [{ edge: '0', producer: 0, epoch: 1, seq: this.taken }] }] };
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function setup() {
  const feeds = new Feeds();
  const env = new StreamEnvironment({ parallelism: P, maxParallelism: MAX_P });
  env.fromSource(feedSource(feeds)).keyBy((r) => r.k).reduce((a, b) => ({ k: a.k, v: a.v + b.v })).sinkTo(coordinatorSink());
  const plan = buildPhysicalPlan(env.graph, env.options);
  const edge = plan.edges[0]!;
  const config: ClusterEdgeConfig = { id: String(edge.id), fromVertex: edge.fromVertex, toVertex: edge.toVertex, mode: 'exchange' };
  const sent: ExchangeBatch[] = [];
  const barriers: number[] = [];
  const receiver = new ScriptedReceiver();
  const sender: ExchangeSender = {
    edge: config.id,
    send: (batch) => (sent.push(batch), Promise.resolve()),
    onBarrier: (checkpointId) => {
      barriers.push(checkpointId);
      return Promise.resolve<ExchangeSenderSnapshot>({ edge: config.id, producer: 0, checkpointId, epoch: 1, sentThrough: sent.length - 1 });
    },
    close: () => Promise.resolve(),
  };
  const transport: ExchangeTransport = {
    openProducer: () => Promise.resolve({ sender: () => sender, close: () => Promise.resolve() }),
    openReceiver: () => Promise.resolve(receiver),
  };
  return { plan, edge, config, sent, barriers, receiver, transport };
}

describe('SlotExchange', () => {
  it('keeps the receiver state for the receiving task whichever task of the slot acks first', async () => {
    const { plan, edge, config, receiver, transport } = setup();
    const exchange = (await SlotExchange.open({ transport, plan, modes: new Map([[edge.id, config]]), slot: 0, epoch: 1, restored: undefined, onFailure: () => {} }))!;
    for (let to = 0; to < P; to++) exchange.sender(config, 0, to).send({ kind: 'barrier', checkpointId: 1, timestamp: 0, savepoint: false });
    exchange.trigger({ kind: 'barrier', checkpointId: 1, timestamp: 0, savepoint: false });
    receiver.taken = 99;
    // The producing task acks first: it must not take the receiving task's state.
    expect(await exchange.taskState(edge.fromVertex, 1)).toEqual({ senders: [{ edge: config.id, producer: 0, checkpointId: 1, epoch: 1, sentThrough: -1 }] });
    expect(await exchange.taskState(edge.toVertex, 1)).toEqual({ receiver: { shards: [{ shardId: 's', producers: [{ edge: '0', producer: 0, epoch: 1, seq: 0 }] }] } });
    await exchange.close();
  });

  it('writes the markers once the barrier reached every target, and queues the injected barrier behind released records', async () => {
    const { plan, edge, config, sent, barriers, receiver, transport } = setup();
    const exchange = (await SlotExchange.open({ transport, plan, modes: new Map([[edge.id, config]]), slot: 0, epoch: 1, restored: undefined, onFailure: () => {} }))!;
    const targets = Array.from({ length: P }, (_, to) => exchange.sender(config, 0, to));
    targets[1]!.send({ kind: 'batch', batch: { values: ['a'], timestamps: [5] } });
    targets[0]!.send({ kind: 'barrier', checkpointId: 3, timestamp: 0, savepoint: false });
    expect(barriers).toEqual([]);
    targets[1]!.send({ kind: 'barrier', checkpointId: 3, timestamp: 0, savepoint: false });
    expect(barriers).toEqual([3]);
    expect(sent).toEqual([{ values: ['a'], timestamps: [5], targets: [1] }]);

    const input = exchange.receiver(config);
    receiver.released = [{ edge: config.id, producer: 1, values: ['x', 'y'], timestamps: [1, 2] }];
    exchange.trigger({ kind: 'barrier', checkpointId: 4, timestamp: 0, savepoint: false });
    expect(input.poll()).toEqual({ kind: 'batch', batch: { values: ['x', 'y'], timestamps: [1, 2] } });
    expect(input.poll()).toMatchObject({ kind: 'barrier', checkpointId: 4 });
    // The snapshot was taken after the released run was handed over (seq 1: one run taken).
    expect((await exchange.taskState(edge.toVertex, 4))?.receiver?.shards[0]?.producers[0]?.seq).toBe(1);
    exchange.completed({ checkpointId: 4, slotEpochs: [1, 1] });
    expect(receiver.completions).toEqual([{ checkpointId: 4, slotEpochs: [1, 1] }]);
    await exchange.close();
  });
});
