import { ConfigError } from '../../core/index.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { PhysicalPlan, Vertex } from '../../graph/physical-plan.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import { splitsOfSubtask } from '../../connectors/split-assignment.ts';
import type { TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { decodeTaskSnapshot } from '../../storage/task-state-codec.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import type { KeyedStateHandle, SharedStateStore } from '../../state/index.ts';
import type { TimerKeyGroupSnapshot } from '../../operators/timer-service.ts';
import type { RestoredOperatorState } from '../operator-chain.ts';
import { failPoint } from './fault-injection.ts';

/** A checkpoint's task snapshots, read back and grouped by vertex. */
export interface RestoredJob {
  readonly checkpointId: number;
  readonly metadata: CheckpointMetadata;
  /** Every old subtask's snapshot of each vertex, in subtask order. */
  readonly snapshots: ReadonlyMap<number, TaskSnapshot[]>;
  /** Where the checkpoint's shared state files are (file-based keyed state reads them while restoring). */
  readonly sharedState: SharedStateStore;
}

/** What one new subtask of a vertex starts from. */
export interface RestoredTask {
  /** For a source vertex: the old splits (with positions) dealt to this subtask. */
  readonly splits: SourceSplit[] | undefined;
  readonly splitWatermarks: unknown[] | undefined;
  readonly operators: Map<number, RestoredOperatorState>;
}

/** Refuses a checkpoint of another job or another number of key groups, with what to do instead. */
export function checkCompatible(metadata: CheckpointMetadata, plan: PhysicalPlan, location: string): void {
  if (metadata.maxParallelism !== plan.maxParallelism) {
    throw new ConfigError(
      `checkpoint ${metadata.checkpointId} in ${location} was taken with maxParallelism ${metadata.maxParallelism} but the job now has ${plan.maxParallelism}: keyed state is stored in ${metadata.maxParallelism} key groups and cannot be redistributed into another number; run with --max-parallelism ${metadata.maxParallelism}, or start without this state (--fresh)`,
    );
  }
  for (const handle of metadata.tasks) {
    const vertex = plan.vertices[handle.task.vertex];
    if (vertex === undefined || vertex.name !== handle.vertexName) {
      throw new ConfigError(
        `checkpoint ${metadata.checkpointId} in ${location} belongs to another job graph: it has operator chain "${handle.vertexName}" as vertex ${handle.task.vertex}, the job has ${vertex === undefined ? 'no such vertex' : `"${vertex.name}"`}; restore it with the job that wrote it, or start fresh (--fresh)`,
      );
    }
  }
}

/** Reads and verifies the snapshots of `vertices` (those a thread runs). */
export async function loadRestoredJob(
  storage: TaskStateReader,
  metadata: CheckpointMetadata,
  vertices: ReadonlySet<number>,
): Promise<RestoredJob> {
  failPoint('restore');
  const snapshots = new Map<number, TaskSnapshot[]>();
  const handles = metadata.tasks.filter((h) => vertices.has(h.task.vertex)).sort((a, b) => a.task.subtask - b.task.subtask);
  for (const handle of handles) {
    const bytes = await storage.readTaskState(handle.path, handle);
    const snapshot = decodeTaskSnapshot(bytes, handle.path);
    snapshots.set(handle.task.vertex, [...(snapshots.get(handle.task.vertex) ?? []), snapshot]);
  }
  return { checkpointId: metadata.checkpointId, metadata, snapshots, sharedState: storage.sharedState };
}

/**
 * Deals a vertex's restored state to new subtask `subtask`: keyed state and timers whole (each subtask keeps the
 * key groups it owns), operator-state items and source splits round-robin, watermarks as they were when the
 * parallelism is unchanged and else the lowest (so that nothing on time becomes late).
 */
export function restoredTask(job: RestoredJob, vertex: Vertex, subtask: number): RestoredTask | undefined {
  const old = job.snapshots.get(vertex.id);
  if (old === undefined || old.length === 0) return undefined;
  const same = job.metadata.parallelism[vertex.id] === vertex.parallelism;
  const deal = <X>(items: readonly X[]): X[] => items.filter((_, i) => i % vertex.parallelism === subtask);
  const operators = new Map<number, RestoredOperatorState>();
  const nodeIds = new Set(old.flatMap((s) => s.operators.map((o) => o.nodeId)));
  for (const nodeId of nodeIds) {
    const parts = old.map((s) => ({ subtask: s.subtask, op: s.operators.find((o) => o.nodeId === nodeId) }));
    const own = parts.find((p) => p.subtask === subtask)?.op;
    operators.set(nodeId, {
      keyed: parts.flatMap((p) => (p.op?.keyed === undefined ? [] : [p.op.keyed as KeyedStateHandle])),
      timers: parts.flatMap((p) => (p.op?.timers as TimerKeyGroupSnapshot[] | undefined) ?? []),
      items: deal(parts.flatMap((p) => p.op?.operatorState ?? [])),
      // A source subtask's splits are dealt anew even at the same parallelism, so its chained operators start from
      // the lowest watermark too: a subtask that had finished (+Infinity) may now read another one's unfinished
      // split, and with its own watermark every watermark of that split would be dropped until the end.
      watermark:
        same && own !== undefined && vertex.source === undefined
          ? own.watermark
          : Math.min(...parts.map((p) => p.op?.watermark ?? Number.NEGATIVE_INFINITY)),
    });
  }
  const source = vertex.source;
  const isSource = source !== undefined;
  return {
    splits: isSource
      ? splitsOfSubtask(source.source, old.flatMap((s) => (s.sourceSplits ?? []) as SourceSplit[]), vertex.parallelism, subtask)
      : undefined,
    splitWatermarks: isSource ? old.map((s) => s.splitWatermarks).filter((w) => w !== undefined) : undefined,
    operators,
  };
}
