import { ConfigError } from '../../core/index.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { PhysicalPlan, Vertex } from '../../graph/physical-plan.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import { splitsOfSubtask } from '../../connectors/split-assignment.ts';
import type { TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { decodeTaskSnapshot } from '../../storage/task-state-codec.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import type { KeyedStateHandle, SharedStateStore } from '../../state/index.ts';
import type { TimerKeyGroupSnapshot } from '../../state/timers/timer-service.ts';
import type { RestoredOperatorState } from '../operator-chain.ts';
import { failPoint } from '../../core/fault-injection.ts';
import { mergeDeclarations, type DeclaredState } from '../state-declarations.ts';
import { checkOperatorMatch, matchOperators } from '../../checkpoint/operator-matching.ts';
import { operatorStateRecords } from '../../graph/operator-records.ts';

/** A checkpoint's task snapshots, read back and grouped by vertex. */
export interface RestoredJob {
  readonly checkpointId: number;
  readonly metadata: CheckpointMetadata;
  /** Every old subtask's snapshot of each old vertex, in subtask order. */
  readonly snapshots: ReadonlyMap<number, TaskSnapshot[]>;
  /** Where each operator of the job (by node id) was in the checkpoint's job; operators not listed start empty. */
  readonly origins: ReadonlyMap<number, OperatorOrigin>;
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

/** An operator's place in the job that wrote a checkpoint. */
export interface OperatorOrigin {
  readonly nodeId: number;
  readonly vertex: number;
}

export interface CompatibilityOptions {
  /** Drop the state of operators the job no longer has instead of refusing. @default false */
  readonly allowNonRestoredState?: boolean;
  /** Receives warnings (state dropped with allowNonRestoredState). */
  readonly log?: (line: string) => void;
}

/**
 * Refuses a checkpoint of another job or another number of key groups, or whose operators' state the job would
 * read differently (another window size, accumulator shape, state version ...), with what to do instead.
 * Checkpoints that record no operators (written before they were recorded) are checked by their vertex names only.
 */
export function checkCompatible(metadata: CheckpointMetadata, plan: PhysicalPlan, location: string, options: CompatibilityOptions = {}): void {
  if (metadata.maxParallelism !== plan.maxParallelism) {
    throw new ConfigError(
      `checkpoint ${metadata.checkpointId} in ${location} was taken with maxParallelism ${metadata.maxParallelism} but the job now has ${plan.maxParallelism}: keyed state is stored in ${metadata.maxParallelism} key groups and cannot be redistributed into another number; run with --max-parallelism ${metadata.maxParallelism}, or start without this state (--fresh)`,
    );
  }
  if (metadata.operators !== undefined) {
    const what = `${metadata.savepoint ? 'savepoint' : 'checkpoint'} ${metadata.checkpointId} in ${location}`;
    const match = matchOperators(metadata.operators, operatorStateRecords(plan));
    const warnings = checkOperatorMatch(match, { what, allowNonRestoredState: options.allowNonRestoredState === true });
    for (const line of warnings) options.log?.(line);
    return;
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

/**
 * Where each operator of `plan` was in the job that wrote `metadata`: paired by name when the checkpoint records
 * its operators (checkCompatible has accepted the pairing), else the same node in the same vertex.
 */
export function operatorOrigins(metadata: CheckpointMetadata, plan: PhysicalPlan): Map<number, OperatorOrigin> {
  const origins = new Map<number, OperatorOrigin>();
  if (metadata.operators !== undefined) {
    for (const [now, before] of matchOperators(metadata.operators, operatorStateRecords(plan)).pairs) {
      origins.set(now.nodeId, { nodeId: before.nodeId, vertex: before.vertex });
    }
    return origins;
  }
  for (const vertex of plan.vertices) {
    for (const node of [...(vertex.source === undefined ? [] : [vertex.source]), ...vertex.chain]) {
      origins.set(node.id, { nodeId: node.id, vertex: vertex.id });
    }
  }
  return origins;
}

/** Reads and verifies the snapshots that `vertices` of `plan` (those a thread runs) restore from. */
export async function loadRestoredJob(
  storage: TaskStateReader,
  metadata: CheckpointMetadata,
  plan: PhysicalPlan,
  vertices: ReadonlySet<number>,
): Promise<RestoredJob> {
  failPoint('restore');
  const origins = operatorOrigins(metadata, plan);
  const oldVertices = new Set(
    plan.vertices
      .filter((v) => vertices.has(v.id))
      .flatMap((v) => [...(v.source === undefined ? [] : [v.source]), ...v.chain])
      .flatMap((node) => origins.get(node.id)?.vertex ?? []),
  );
  const snapshots = new Map<number, TaskSnapshot[]>();
  const handles = metadata.tasks.filter((h) => oldVertices.has(h.task.vertex)).sort((a, b) => a.task.subtask - b.task.subtask);
  for (const handle of handles) {
    const bytes = await storage.readTaskState(handle.path, handle);
    const snapshot = decodeTaskSnapshot(bytes, handle.path);
    snapshots.set(handle.task.vertex, [...(snapshots.get(handle.task.vertex) ?? []), snapshot]);
  }
  return { checkpointId: metadata.checkpointId, metadata, snapshots, origins, sharedState: storage.sharedState };
}

/**
 * Deals a vertex's restored state to new subtask `subtask`: keyed state and timers whole (each subtask keeps the
 * key groups it owns), operator-state items and source splits round-robin, watermarks as they were when the
 * parallelism is unchanged and else the lowest (so that nothing on time becomes late).
 */
export function restoredTask(job: RestoredJob, vertex: Vertex, subtask: number): RestoredTask | undefined {
  const deal = <X>(items: readonly X[]): X[] => items.filter((_, i) => i % vertex.parallelism === subtask);
  const operators = new Map<number, RestoredOperatorState>();
  for (const node of vertex.chain) {
    const origin = job.origins.get(node.id);
    const old = origin === undefined ? undefined : job.snapshots.get(origin.vertex);
    if (origin === undefined || old === undefined || old.length === 0) continue;
    const same = job.metadata.parallelism[origin.vertex] === vertex.parallelism;
    const parts = old.map((s) => ({ subtask: s.subtask, op: s.operators.find((o) => o.nodeId === origin.nodeId) }));
    if (parts.every((p) => p.op === undefined)) continue;
    const own = parts.find((p) => p.subtask === subtask)?.op;
    operators.set(node.id, {
      states: mergeDeclarations(parts.map((p) => p.op?.states as DeclaredState[] | undefined)),
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
  const sourceOrigin = source === undefined ? undefined : job.origins.get(source.id);
  const oldSource = sourceOrigin === undefined ? undefined : job.snapshots.get(sourceOrigin.vertex);
  const restoresSource = source !== undefined && oldSource !== undefined && oldSource.length > 0;
  if (operators.size === 0 && !restoresSource) return undefined;
  return {
    splits: restoresSource
      ? splitsOfSubtask(source.source, oldSource.flatMap((s) => (s.sourceSplits ?? []) as SourceSplit[]), vertex.parallelism, subtask)
      : undefined,
    splitWatermarks: restoresSource ? oldSource.map((s) => s.splitWatermarks).filter((w) => w !== undefined) : undefined,
    operators,
  };
}
