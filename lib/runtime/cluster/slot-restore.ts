import { ConfigError } from '../../core/index.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { SourceSplit } from '../../connectors/source.ts';
import type { PhysicalPlan, Vertex } from '../../graph/physical-plan.ts';
import type { KeyedStateHandle } from '../../state/index.ts';
import type { TimerKeyGroupSnapshot } from '../../state/timers/timer-service.ts';
import type { TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../../storage/errors.ts';
import { decodeMetadata } from '../../storage/metadata-codec.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import { decodeTaskSnapshot } from '../../storage/task-state-codec.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import type { RestoredOperatorState } from '../operator-chain.ts';
import { checkCompatible, operatorOrigins, type RestoredJob, type RestoredTask } from '../restore/restore-plan.ts';
import type { DeclaredState } from '../state-declarations.ts';

/** The completed checkpoint a slot restores from (`ControlItem.completed`). */
export interface CompletedCheckpointRef {
  readonly checkpointId: number;
  readonly metadataPath: string;
}

/** Reads and verifies a completed checkpoint's metadata object. A missing or damaged one fails loudly. */
export async function readCompletedMetadata(store: ObjectStore, completed: CompletedCheckpointRef): Promise<CheckpointMetadata> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await store.get(completed.metadataPath);
  } catch (cause) {
    throw new CheckpointIoError('read checkpoint metadata', store.describe(completed.metadataPath), cause);
  }
  if (bytes === undefined) {
    throw new CheckpointCorruptError(store.describe(completed.metadataPath), `the control table says checkpoint ${completed.checkpointId} is complete, but its metadata is missing`);
  }
  return decodeMetadata(bytes, store.describe(completed.metadataPath), completed.checkpointId);
}

/**
 * Reads and verifies ONLY slot `slot`'s task files of a completed checkpoint (subtask `slot` of every vertex): a
 * slot recovers alone and never depends on another slot's files. A corrupt file throws (CheckpointCorruptError);
 * the caller must fail the slot, never fall back to an older checkpoint (that would replay committed output).
 */
export async function loadSlotState(reader: TaskStateReader, metadata: CheckpointMetadata, plan: PhysicalPlan, slot: number, location: string): Promise<RestoredJob> {
  checkCompatible(metadata, plan, location);
  for (const v of plan.vertices) {
    const before = metadata.parallelism[v.id];
    if (before !== undefined && before !== v.parallelism) {
      throw new ConfigError(
        `checkpoint ${metadata.checkpointId} ran vertex "${v.name}" at parallelism ${before}, the cluster at ${v.parallelism}: a slot restores only its own state, and rescaling a cluster job is not supported yet`,
      );
    }
  }
  const snapshots = new Map<number, TaskSnapshot[]>();
  for (const handle of metadata.tasks.filter((h) => h.task.subtask === slot)) {
    const bytes = await reader.readTaskState(handle.path, handle);
    snapshots.set(handle.task.vertex, [decodeTaskSnapshot(bytes, handle.path)]);
  }
  return { checkpointId: metadata.checkpointId, metadata, snapshots, origins: operatorOrigins(metadata, plan), sharedState: reader.sharedState };
}

/**
 * A slot task's own state, as it was (the parallelism is unchanged, so nothing is dealt anew): keyed state, timers,
 * operator-state items, watermark and source splits of the same subtask. The TaskSetup.restoreTask of a slot.
 */
export function restoredSlotTask(job: RestoredJob, vertex: Vertex, subtask: number): RestoredTask | undefined {
  const own = (oldVertex: number): TaskSnapshot | undefined => job.snapshots.get(oldVertex)?.find((s) => s.subtask === subtask);
  const operators = new Map<number, RestoredOperatorState>();
  for (const node of vertex.chain) {
    const origin = job.origins.get(node.id);
    const op = origin === undefined ? undefined : own(origin.vertex)?.operators.find((o) => o.nodeId === origin.nodeId);
    if (op === undefined) continue;
    operators.set(node.id, {
      states: (op.states as DeclaredState[] | undefined) ?? [],
      keyed: op.keyed === undefined ? [] : [op.keyed as KeyedStateHandle],
      timers: (op.timers as TimerKeyGroupSnapshot[] | undefined) ?? [],
      items: op.operatorState ?? [],
      watermark: op.watermark,
    });
  }
  const sourceOrigin = vertex.source === undefined ? undefined : job.origins.get(vertex.source.id);
  const source = sourceOrigin === undefined ? undefined : own(sourceOrigin.vertex);
  if (operators.size === 0 && source === undefined) return undefined;
  return {
    splits: source === undefined ? undefined : ((source.sourceSplits ?? []) as SourceSplit[]),
    splitWatermarks: source?.splitWatermarks === undefined ? undefined : [source.splitWatermarks],
    operators,
  };
}
