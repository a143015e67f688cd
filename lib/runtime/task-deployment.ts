import type { MessagePort } from 'node:worker_threads';
import { SluiceError, type BarrierElement, type Clock } from '../core/index.ts';
import type { CompiledJobOptions } from '../contracts/job-options.ts';
import type { PhysicalEdge, PhysicalPlan } from '../graph/physical-plan.ts';
import type { SourceSplit } from '../connectors/source.ts';
import { splitsOfSubtask } from '../connectors/split-assignment.ts';
import type { ChannelReceiver, ChannelSender } from './channels/channel.ts';
import { LocalChannel } from './channels/local-channel.ts';
import { PortReceiver, PortSender } from './channels/port-channel.ts';
import { InputGate } from './input-gate.ts';
import { OperatorChain, type KeyedServices, type NodeWriters } from './operator-chain.ts';
import { RecordWriter } from './record-writer.ts';
import { runChainTask } from './chain-task.ts';
import { runSourceTask } from './source-task.ts';
import type { TaskMetrics } from './task-metrics.ts';
import { LateDropWarnings } from './late-drop-warnings.ts';
import { CheckpointRequests, type CheckpointParticipant } from './checkpoint-driver/participant.ts';
import { restoredTask, type RestoredJob } from './restore/restore-plan.ts';
import type { SplitWatermarksSnapshot } from './split-watermarks.ts';
import type { AlignmentLink } from './alignment/alignment-link.ts';

/** Consumer subtasks that producer subtask `from` sends to on `edge`. */
export function targetsOf(edge: PhysicalEdge, from: number, consumerParallelism: number): number[] {
  if (edge.partitioner.kind === 'forward') return [from];
  return Array.from({ length: consumerParallelism }, (_, j) => j);
}

/** Names one channel: edge, producer subtask, consumer subtask. */
export function channelKey(edge: number, from: number, to: number): string {
  return `${edge}:${from}:${to}`;
}

/** Every channel whose two ends run on different threads, with the thread of each end. */
export function crossThreadChannels(plan: PhysicalPlan, threadOf: (subtask: number) => number): { key: string; producer: number; consumer: number }[] {
  const result: { key: string; producer: number; consumer: number }[] = [];
  for (const edge of plan.edges) {
    const producerP = plan.vertices[edge.fromVertex]!.parallelism;
    const consumerP = plan.vertices[edge.toVertex]!.parallelism;
    for (let i = 0; i < producerP; i++) {
      for (const j of targetsOf(edge, i, consumerP)) {
        if (threadOf(i) !== threadOf(j)) result.push({ key: channelKey(edge.id, i, j), producer: threadOf(i), consumer: threadOf(j) });
      }
    }
  }
  return result;
}

export interface DeploymentSetup {
  readonly plan: PhysicalPlan;
  readonly options: CompiledJobOptions;
  /** Splits per source vertex id, all subtasks; split i goes to subtask i % parallelism. */
  readonly splits: ReadonlyMap<number, SourceSplit[]>;
  readonly thread: number;
  readonly threadOf: (subtask: number) => number;
  /** MessagePorts of cross-thread channels that have an end on this thread. */
  readonly ports: ReadonlyMap<string, MessagePort>;
  readonly services: KeyedServices;
  readonly clock: Clock;
  /** This thread's part in checkpoints (NO_CHECKPOINTS without checkpointing). */
  readonly checkpoints: CheckpointParticipant;
  /** Identifies this run of the job (sinks name their temporary files with it). */
  readonly attempt: string;
  /** The checkpoint this run starts from, if any (only the vertices this thread runs need to be loaded). */
  readonly restored?: RestoredJob | undefined;
  /** Warnings of the tasks while they run (late records dropped). @default stderr */
  readonly warn?: ((line: string) => void) | undefined;
  /** Watermark alignment of source splits across subtasks and threads. @default none (no source is aligned) */
  readonly alignment?: AlignmentLink | undefined;
}

export interface DeployedTask {
  readonly name: string;
  readonly subtask: number;
  readonly metrics: TaskMetrics;
  run(): Promise<void>;
  /** Unblocks the task so that it ends with `reason` (the job is failing or cancelled). */
  cancel(reason: unknown): void;
  /** Sources inject this barrier between two batches; other tasks ignore it (barriers reach them by channel). */
  triggerCheckpoint(barrier: BarrierElement): void;
  /**
   * Runs the chain's completion hooks (sink commits) from the task's mailbox. The promise resolves once they ran
   * (failed or not: a failing hook fails the task, which reports it); it stays pending if the task has ended.
   */
  notifyCheckpointComplete(checkpointId: number): Promise<void>;
}

class TaskFailedError extends SluiceError {
  constructor(task: string, subtask: number, cause: unknown) {
    super('TASK_FAILED', `task "${task}" (subtask ${subtask}) failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
      retriable: true,
    });
  }
}

/** Builds the tasks that run on one thread, with their channels: local queues within the thread, ports across. */
export function deployTasks(setup: DeploymentSetup): DeployedTask[] {
  const { plan, options, thread, threadOf } = setup;
  const warn = setup.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  const local = new Map<string, LocalChannel>();
  const localChannel = (key: string) => {
    let ch = local.get(key);
    if (ch === undefined) {
      ch = new LocalChannel(options.channelCapacity);
      local.set(key, ch);
    }
    return ch;
  };
  const port = (key: string) => {
    const p = setup.ports.get(key);
    if (p === undefined) throw new SluiceError('INTERNAL', `no port for channel ${key} on thread ${thread}`);
    return p;
  };
  // A cross-thread channel's credits come back only when the other thread's event loop turns: allow more in flight.
  const sender = (key: string, to: number): ChannelSender =>
    threadOf(to) === thread ? localChannel(key) : new PortSender(port(key), 4 * options.channelCapacity);
  const receiver = (key: string, from: number): ChannelReceiver =>
    threadOf(from) === thread ? localChannel(key) : new PortReceiver(port(key));

  const tasks: DeployedTask[] = [];
  for (const vertex of plan.vertices) {
    for (let subtask = 0; subtask < vertex.parallelism; subtask++) {
      if (threadOf(subtask) !== thread) continue;
      const writers = new Map<number, NodeWriters>();
      for (const edge of vertex.outputs) {
        const consumerP = plan.vertices[edge.toVertex]!.parallelism;
        const senders = targetsOf(edge, subtask, consumerP).map((j) => sender(channelKey(edge.id, subtask, j), j));
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
          receivers.push(receiver(channelKey(edge.id, i, subtask), i));
          inputIndexOfChannel.push(edge.inputIndex);
        }
      }
      const gate = new InputGate(receivers);
      const restored = setup.restored === undefined ? undefined : restoredTask(setup.restored, vertex, subtask);
      const chain = new OperatorChain({
        vertexName: vertex.name,
        subtask,
        parallelism: vertex.parallelism,
        maxParallelism: plan.maxParallelism,
        clock: setup.clock,
        chain: vertex.chain,
        writers,
        headNodeId: vertex.source?.id,
        services: setup.services,
        post: (run) => gate.post(run),
        checkpointing: setup.checkpoints.enabled,
        attempt: setup.attempt,
        restored: restored?.operators,
        restoreStore: setup.restored?.sharedState,
      });
      const requests = new CheckpointRequests(() => gate.post(() => {}));
      const metrics: TaskMetrics = { vertex: vertex.name, subtask, source: vertex.source !== undefined, recordsIn: 0, recordsOut: 0, droppedLateRecords: 0 };
      const lateDrops = new LateDropWarnings(`task "${vertex.name}" (subtask ${subtask})`, warn);
      const abort = new AbortController();
      const allSplits = vertex.source === undefined ? [] : (setup.splits.get(vertex.id) ?? []);
      const source = vertex.source;
      const body =
        source === undefined
          ? () =>
              runChainTask({
                vertex: vertex.id,
                vertexName: vertex.name,
                subtask,
                chain,
                gate,
                inputIndexOfChannel,
                metrics,
                lateDrops,
                checkpoints: setup.checkpoints,
              })
          : () =>
              runSourceTask({
                vertex: vertex.id,
                vertexName: vertex.name,
                node: source,
                subtask,
                parallelism: vertex.parallelism,
                splits: restored?.splits ?? splitsOfSubtask(source.source, allSplits, vertex.parallelism, subtask),
                splitWatermarks: restored?.splitWatermarks as SplitWatermarksSnapshot[] | undefined,
                checkpoints: setup.checkpoints,
                requests,
                chain,
                gate,
                clock: setup.clock,
                batchSize: options.batchSize,
                signal: abort.signal,
                metrics,
                lateDrops,
                attempt: setup.attempt,
                alignment: setup.alignment,
                onReaderComplete: (notify) => {
                  notifyReader = notify;
                },
              });
      let notifyReader: ((checkpointId: number) => Promise<void>) | undefined;
      const name = vertex.name;
      tasks.push({
        name,
        subtask,
        metrics,
        async run() {
          let failure: unknown;
          try {
            await body();
          } catch (err) {
            failure = err instanceof SluiceError ? err : new TaskFailedError(name, subtask, err);
          }
          try {
            await chain.close();
          } catch (err) {
            // A failure while closing after a failure is a consequence; report the first one.
            failure ??= err instanceof SluiceError ? err : new TaskFailedError(name, subtask, err);
          } finally {
            gate.close();
          }
          if (failure !== undefined) throw failure;
        },
        triggerCheckpoint(barrier) {
          if (source !== undefined) requests.trigger(barrier);
        },
        notifyCheckpointComplete(checkpointId) {
          return new Promise<void>((resolve) => {
            gate.post(async () => {
              try {
                await chain.notifyCheckpointComplete(checkpointId);
                await notifyReader?.(checkpointId);
              } finally {
                resolve();
              }
            });
          });
        },
        cancel(reason) {
          abort.abort(reason);
          gate.fail(reason);
          for (const ch of receivers) ch.close();
          for (const ch of local.values()) ch.close();
        },
      });
    }
  }
  return tasks;
}
