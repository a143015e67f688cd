import { ConfigError, SluiceError, type BarrierElement, type StreamElement } from '../../core/index.ts';
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

/** A record routed by an aligned keyBy to another slot: the source read a key outside the slot's key groups. */
export class KeyGroupMismatchError extends SluiceError {
  constructor(edge: string, slot: number, target: number) {
    super(
      'KEY_GROUP_MISMATCH',
      `aligned edge ${edge}: slot ${slot} produced a record whose key group belongs to slot ${target}; an aligned keyBy ` +
        `needs a source that reads only the slot's key groups (keyGroups: 'kinesis-hash' right behind a Kinesis source)`,
      { retriable: false },
    );
  }
}

/** What an aligned edge's writer holds for the other slots: control elements pass (dropped), a record fails the slot. */
class MisroutedSender implements ChannelSender {
  readonly blocked = false;

  constructor(
    private readonly edge: string,
    private readonly slot: number,
    private readonly target: number,
  ) {}

  send(element: StreamElement<unknown>): void {
    if (element.kind === 'batch' && element.batch.values.length > 0) throw new KeyGroupMismatchError(this.edge, this.slot, this.target);
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
    const senders = sendersOf(edge, config, slot, consumerP, channels, exchange);
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
): ChannelSender[] {
  const mode: EdgeMode = config.mode;
  switch (mode) {
    case 'local':
      if (edge.partitioner.kind !== 'forward') throw new ConfigError(`edge ${edge.id} is stored as local but is a ${edge.partitioner.kind} edge: run \`sluice aws init\` again`);
      return [channels.sender(channelSpec(edge, slot, slot))];
    case 'aligned':
      return Array.from({ length: consumerP }, (_, j) =>
        j === slot ? channels.sender(channelSpec(edge, slot, slot)) : new MisroutedSender(config.id, slot, j),
      );
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
