import { ConfigError, checkKey, keyGroupRangeForSubtask, kinesisKeyGroupOf, type BarrierElement, type Key, type StreamElement } from '../../core/index.ts';
import { checkAlignedBatch, KeyGroupMismatchError, shardOfSplitId, type AlignedSlotKeyGroups } from '../../cluster/aligned-key-groups.ts';
import type { ClusterEdgeConfig, EdgeMode } from '../../cluster/control-items.ts';
import type { PhysicalEdge, PhysicalPlan, Vertex } from '../../graph/physical-plan.ts';
import type { ChannelFactory, ChannelSpec } from '../channels/channel-factory.ts';
import type { ChannelReceiver, ChannelSender } from '../channels/channel.ts';
import { channelKey, type TaskWiring } from '../channel-wiring.ts';
import type { NodeWriters } from '../operator-chain.ts';
import { RecordWriter } from '../record-writer.ts';

/**
 * The seam where the exchange data path (an internal Kinesis stream, read-committed) plugs into a slot: the ends of
 * an `exchange` edge for one slot. Implemented by the exchange part; until it is wired in, a plan with an exchange
 * edge is refused.
 */
export interface ExchangeChannels {
  /** The sender from producer slot `slot` to consumer subtask `to` of `edge`. */
  sender(edge: ClusterEdgeConfig, slot: number, to: number): ChannelSender;
  /** The one receiver of consumer slot `slot` on `edge` (every producer slot's records, deduplicated, committed only). */
  receiver(edge: ClusterEdgeConfig, slot: number): ChannelReceiver;
  /** A checkpoint was triggered: the receivers of the slot mark their read position (no barrier crosses the exchange). */
  trigger?(barrier: BarrierElement): void;
}

/**
 * What an aligned edge's writer holds for the other slots: control elements pass (dropped), a record fails the slot
 * with KeyGroupMismatchError naming its key, shard and slot (checkAlignedBatch). Not retriable: the source reads the
 * same record again after any restart, so the worker fails instead of restarting the slot forever.
 */
class MisroutedSender implements ChannelSender {
  readonly blocked = false;

  constructor(
    private readonly keySelector: (value: unknown) => Key,
    private readonly slots: AlignedSlotKeyGroups,
    private readonly operator: string,
  ) {}

  send(element: StreamElement<unknown>): void {
    if (element.kind !== 'batch' || element.batch.values.length === 0) return;
    const shard = element.batch.split === undefined ? undefined : shardOfSplitId(element.batch.split);
    checkAlignedBatch(element.batch.values, this.keySelector, shard, this.slots, this.operator);
    // Only a key selector that answers differently for the same record gets here: the writer routed it away.
    const key = checkKey(this.keySelector(element.batch.values[0]));
    throw new KeyGroupMismatchError(key, kinesisKeyGroupOf(key, this.slots.maxParallelism), shard, this.slots, this.operator);
  }

  awaitCapacity(): Promise<void> {
    return Promise.resolve();
  }

  flushed(): Promise<void> {
    return Promise.resolve();
  }
}

/** The mode of every physical edge, from the `config` item; an edge it does not list is a ConfigError. */
export function edgeModes(plan: PhysicalPlan, edges: readonly ClusterEdgeConfig[]): Map<number, ClusterEdgeConfig> {
  const byId = new Map(edges.map((e) => [e.id, e]));
  const modes = new Map<number, ClusterEdgeConfig>();
  for (const edge of plan.edges) {
    const config = byId.get(String(edge.id));
    if (config === undefined || config.fromVertex !== edge.fromVertex || config.toVertex !== edge.toVertex) {
      throw new ConfigError(
        `edge ${edge.id} (vertex ${edge.fromVertex} -> ${edge.toVertex}) is not in the cluster's stored config as such: the job differs from the one \`sluice aws init\` deployed`,
      );
    }
    modes.set(edge.id, config);
  }
  return modes;
}

/** Every vertex at the cluster's parallelism P, no bounded source: what a plan needs to run as P slots. */
export function checkSlotPlan(plan: PhysicalPlan, parallelism: number): void {
  for (const v of plan.vertices) {
    if (v.parallelism !== parallelism) {
      throw new ConfigError(`vertex "${v.name}" runs at parallelism ${v.parallelism}, but a cluster runs every vertex at P = ${parallelism} (one subtask per slot)`);
    }
    if (v.source?.source.bounded === true) {
      throw new ConfigError(`source "${v.source.name}" is bounded: a cluster slot runs unbounded sources only (run bounded jobs with \`sluice run\`)`);
    }
  }
}

function channelSpec(edge: PhysicalEdge, from: number, to: number): ChannelSpec {
  return {
    key: channelKey(edge.id, from, to),
    producer: { vertex: edge.fromVertex, subtask: from },
    consumer: { vertex: edge.toVertex, subtask: to },
    producerWorker: from,
    consumerWorker: to,
  };
}

/**
 * The channel ends of subtask `slot` of `vertex` in a slot: `local` (forward) and `aligned` edges are in-memory
 * channels within the slot (an aligned writer's other targets refuse records), `exchange` edges go through the
 * exchange seam. The slot's own ChannelFactory (worker id = slot) makes the in-memory ends.
 */
export function wireSlotTask(
  plan: PhysicalPlan,
  vertex: Vertex,
  slot: number,
  modes: ReadonlyMap<number, ClusterEdgeConfig>,
  channels: ChannelFactory,
  exchange: ExchangeChannels | undefined,
): TaskWiring {
  const modeOf = (edge: PhysicalEdge): ClusterEdgeConfig => modes.get(edge.id)!;
  const writers = new Map<number, NodeWriters>();
  for (const edge of vertex.outputs) {
    const config = modeOf(edge);
    const consumerP = plan.vertices[edge.toVertex]!.parallelism;
    const senders = sendersOf(edge, config, slot, consumerP, channels, exchange, { operator: vertex.name, maxParallelism: plan.maxParallelism });
    const writer = new RecordWriter(edge.partitioner, senders, plan.maxParallelism, { name: vertex.name, subtask: slot });
    let w = writers.get(edge.fromNode);
    if (w === undefined) {
      w = { main: [], side: new Map() };
      writers.set(edge.fromNode, w);
    }
    if (edge.sideTag === undefined) w.main.push(writer);
    else w.side.set(edge.sideTag, [...(w.side.get(edge.sideTag) ?? []), writer]);
  }
  const receivers: ChannelReceiver[] = [];
  const inputIndexOfChannel: number[] = [];
  for (const edge of vertex.inputs) {
    const config = modeOf(edge);
    receivers.push(config.mode === 'exchange' ? needExchange(exchange, config).receiver(config, slot) : channels.receiver(channelSpec(edge, slot, slot)));
    inputIndexOfChannel.push(edge.inputIndex);
  }
  return { writers, receivers, inputIndexOfChannel };
}

function sendersOf(
  edge: PhysicalEdge,
  config: ClusterEdgeConfig,
  slot: number,
  consumerP: number,
  channels: ChannelFactory,
  exchange: ExchangeChannels | undefined,
  producer: { readonly operator: string; readonly maxParallelism: number },
): ChannelSender[] {
  const mode: EdgeMode = config.mode;
  switch (mode) {
    case 'local':
      if (edge.partitioner.kind !== 'forward') throw new ConfigError(`edge ${edge.id} is stored as local but is a ${edge.partitioner.kind} edge: run \`sluice aws init\` again`);
      return [channels.sender(channelSpec(edge, slot, slot))];
    case 'aligned': {
      if (edge.partitioner.kind !== 'hash') throw new ConfigError(`edge ${edge.id} is stored as aligned but is a ${edge.partitioner.kind} edge: run \`sluice aws init\` again`);
      const own: AlignedSlotKeyGroups = { slot, range: keyGroupRangeForSubtask(slot, consumerP, producer.maxParallelism), maxParallelism: producer.maxParallelism };
      const misrouted = new MisroutedSender(edge.partitioner.keySelector, own, producer.operator);
      return Array.from({ length: consumerP }, (_, j) => (j === slot ? channels.sender(channelSpec(edge, slot, slot)) : misrouted));
    }
    case 'exchange': {
      const ex = needExchange(exchange, config);
      return Array.from({ length: consumerP }, (_, j) => ex.sender(config, slot, j));
    }
  }
}

function needExchange(exchange: ExchangeChannels | undefined, edge: ClusterEdgeConfig): ExchangeChannels {
  if (exchange === undefined) {
    throw new ConfigError(`edge ${edge.id} (vertex ${edge.fromVertex} -> ${edge.toVertex}): exchange edges need the exchange stream (--exchange-stream), which this worker does not have`);
  }
  return exchange;
}
