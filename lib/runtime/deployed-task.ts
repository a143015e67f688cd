import { SluiceError, type BarrierElement, type Clock, type FencingToken } from '../core/index.ts';
import type { CompiledJobOptions } from '../contracts/job-options.ts';
import type { PhysicalPlan, Vertex } from '../graph/physical-plan.ts';
import type { SourceSplit } from '../connectors/source.ts';
import type { SplitEnumerator } from '../connectors/split-enumerator.ts';
import type { ChannelFactory } from './channels/channel-factory.ts';
import type { AlignmentLink } from './alignment/alignment-link.ts';
import type { TaskWiring } from './channel-wiring.ts';
import { InputGate } from './input-gate.ts';
import { OperatorChain, type KeyedServices } from './operator-chain.ts';
import { runChainTask } from './chain-task.ts';
import { runSourceTask } from './source-task.ts';
import type { TaskMetrics } from './task-metrics.ts';
import { LateDropWarnings } from './late-drop-warnings.ts';
import { CheckpointRequests, type CheckpointParticipant } from './checkpoint-driver/participant.ts';
import { restoredTask, type RestoredJob, type RestoredTask } from './restore/restore-plan.ts';
import type { SplitWatermarksSnapshot } from './split-watermarks.ts';

/** What every task of a worker shares. */
export interface TaskSetup {
  readonly options: CompiledJobOptions;
  /** Makes this worker's channel ends: in-memory within the worker, across workers whatever the deployment uses. */
  readonly channels: ChannelFactory;
  /** Which splits each source subtask reads when it has none restored. */
  readonly splits: SplitEnumerator;
  readonly services: KeyedServices;
  readonly clock: Clock;
  /** This worker's part in checkpoints (NO_CHECKPOINTS without checkpointing). */
  readonly checkpoints: CheckpointParticipant;
  /** The fencing token of this attempt (sinks name their temporary files with it). */
  readonly fencing: FencingToken;
  /** The checkpoint this run starts from, if any (only the vertices this worker runs need to be loaded). */
  readonly restored?: RestoredJob | undefined;
  /** Warnings of the tasks while they run (late records dropped). @default stderr */
  readonly warn?: ((line: string) => void) | undefined;
  /** Watermark alignment of source splits across subtasks and workers. @default none (no source is aligned) */
  readonly alignment?: AlignmentLink | undefined;
  /**
   * How a task's part of `restored` is dealt. A cluster slot restores only its own subtask's state at an unchanged
   * parallelism (restoredSlotTask in lib/runtime/cluster). @default restoredTask (redistribute every old subtask's state)
   */
  readonly restoreTask?: ((job: RestoredJob, vertex: Vertex, subtask: number) => RestoredTask | undefined) | undefined;
  /** Who commits two-phase-commit sinks (see SinkContext.commitMode). @default 'self' */
  readonly sinkCommitMode?: 'self' | 'coordinator' | undefined;
  /**
   * The key groups a source subtask reads (SourceReaderContext.alignedKeyGroups), for sources behind an aligned
   * keyBy in a cluster slot. @default none: every source reads its splits whole
   */
  readonly alignedKeyGroups?: ((vertex: number, subtask: number) => AlignedKeyGroups | undefined) | undefined;
  /** Told when a task's operators opened and restored their state (a slot reports when it is running). @default nothing */
  readonly onTaskOpened?: ((vertex: number, subtask: number) => void) | undefined;
}

/** The key-group range of a slot that an aligned source reads. */
export interface AlignedKeyGroups {
  readonly start: number;
  readonly end: number;
  readonly maxParallelism: number;
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

/** Builds the task of subtask `subtask` of `vertex` over its channel ends. */
export function createTask(setup: TaskSetup, plan: PhysicalPlan, vertex: Vertex, subtask: number, wiring: TaskWiring): DeployedTask {
  const { writers, receivers, inputIndexOfChannel } = wiring;
  const warn = setup.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  const gate = new InputGate(receivers);
  const restored = setup.restored === undefined ? undefined : (setup.restoreTask ?? restoredTask)(setup.restored, vertex, subtask);
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
    fencing: setup.fencing,
    restored: restored?.operators,
    restoreStore: setup.restored?.sharedState,
    sinkCommitMode: setup.sinkCommitMode,
    onOpened: setup.onTaskOpened === undefined ? undefined : () => setup.onTaskOpened?.(vertex.id, subtask),
  });
  const requests = new CheckpointRequests(() => gate.post(() => {}));
  const metrics: TaskMetrics = { vertex: vertex.name, subtask, source: vertex.source !== undefined, recordsIn: 0, recordsOut: 0, droppedLateRecords: 0 };
  const lateDrops = new LateDropWarnings(`task "${vertex.name}" (subtask ${subtask})`, warn);
  const abort = new AbortController();
  const source = vertex.source;
  const restoredSplits = restored?.splits;
  const splits = (): Promise<readonly SourceSplit[]> =>
    restoredSplits !== undefined ? Promise.resolve(restoredSplits) : setup.splits.assignedSplits(vertex.id, subtask);
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
            splits,
            splitWatermarks: restored?.splitWatermarks as SplitWatermarksSnapshot[] | undefined,
            checkpoints: setup.checkpoints,
            requests,
            chain,
            gate,
            clock: setup.clock,
            batchSize: setup.options.batchSize,
            signal: abort.signal,
            metrics,
            lateDrops,
            fencing: setup.fencing,
            alignment: setup.alignment,
            alignedKeyGroups: setup.alignedKeyGroups?.(vertex.id, subtask),
            onReaderComplete: (notify) => {
              notifyReader = notify;
            },
          });
  let notifyReader: ((checkpointId: number) => Promise<void>) | undefined;
  const name = vertex.name;
  return {
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
      setup.channels.close();
    },
  };
}
