import type { PhysicalEdge, PhysicalPlan, Vertex } from '../graph/physical-plan.ts';
import type { ChannelFactory, ChannelSpec } from './channels/channel-factory.ts';
import type { ChannelReceiver } from './channels/channel.ts';
import type { NodeWriters } from './operator-chain.ts';
import type { Placement } from './placement.ts';
import { RecordWriter } from './record-writer.ts';

/** Consumer subtasks that producer subtask `from` sends to on `edge`. */
export function targetsOf(edge: PhysicalEdge, from: number, consumerParallelism: number): number[] {
  if (edge.partitioner.kind === 'forward') return [from];
  return Array.from({ length: consumerParallelism }, (_, j) => j);
}

/** Names one channel: edge, producer subtask, consumer subtask. */
export function channelKey(edge: number, from: number, to: number): string {
  return `${edge}:${from}:${to}`;
}

function channelOf(edge: PhysicalEdge, from: number, to: number, placement: Placement): ChannelSpec {
  const producer = { vertex: edge.fromVertex, subtask: from };
  const consumer = { vertex: edge.toVertex, subtask: to };
  return { key: channelKey(edge.id, from, to), producer, consumer, producerWorker: placement(producer), consumerWorker: placement(consumer) };
}

/** Every channel of the plan, with the worker of each end. */
export function channelsOf(plan: PhysicalPlan, placement: Placement): ChannelSpec[] {
  const result: ChannelSpec[] = [];
  for (const edge of plan.edges) {
    const producerP = plan.vertices[edge.fromVertex]!.parallelism;
    const consumerP = plan.vertices[edge.toVertex]!.parallelism;
    for (let i = 0; i < producerP; i++) {
      for (const j of targetsOf(edge, i, consumerP)) result.push(channelOf(edge, i, j, placement));
    }
  }
  return result;
}

/** Every channel whose two ends run on different workers: those need a channel kind that crosses between them. */
export function crossWorkerChannels(plan: PhysicalPlan, placement: Placement): ChannelSpec[] {
  return channelsOf(plan, placement).filter((ch) => ch.producerWorker !== ch.consumerWorker);
}

/** The channel ends of one task: a writer per output edge (grouped by chain node) and a receiver per input channel. */
export interface TaskWiring {
  readonly writers: Map<number, NodeWriters>;
  readonly receivers: ChannelReceiver[];
  /** For each receiver, the input (0 or 1, for two-input operators) its channel feeds. */
  readonly inputIndexOfChannel: number[];
}

/** Asks `channels` for the ends of subtask `subtask` of `vertex`, in the order the task reads and writes them. */
export function wireTask(plan: PhysicalPlan, vertex: Vertex, subtask: number, placement: Placement, channels: ChannelFactory): TaskWiring {
  const writers = new Map<number, NodeWriters>();
  for (const edge of vertex.outputs) {
    const consumerP = plan.vertices[edge.toVertex]!.parallelism;
    const senders = targetsOf(edge, subtask, consumerP).map((j) => channels.sender(channelOf(edge, subtask, j, placement)));
    const writer = new RecordWriter(edge.partitioner, senders, plan.maxParallelism, { name: vertex.name, subtask });
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
    const producerP = plan.vertices[edge.fromVertex]!.parallelism;
    for (let i = 0; i < producerP; i++) {
      if (!targetsOf(edge, i, vertex.parallelism).includes(subtask)) continue;
      receivers.push(channels.receiver(channelOf(edge, i, subtask, placement)));
      inputIndexOfChannel.push(edge.inputIndex);
    }
  }
  return { writers, receivers, inputIndexOfChannel };
}
