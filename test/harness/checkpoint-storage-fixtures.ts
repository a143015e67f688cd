import { taskStateFileName } from '../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION } from '../../lib/checkpoint/types.ts';
import type { CheckpointMetadata, SharedFileEntry, TaskStateHandle } from '../../lib/checkpoint/types.ts';
import { encodeTaskSnapshot, type CheckpointStorage } from '../../lib/storage/index.ts';

export interface TestCheckpointOptions {
  /** false: write the task files only, as a checkpoint that crashed before its commit. */
  readonly commit?: boolean;
  readonly savepoint?: boolean;
  /** Shared files listed by task (1, 0). */
  readonly shared?: readonly SharedFileEntry[];
  readonly completedAt?: number;
}

/**
 * Writes the state of two tasks (vertex 1, subtasks 0 and 1, operator state `{ id, subtask }`) and, unless `commit`
 * is false, the metadata that completes checkpoint `id`.
 */
export async function writeTestCheckpoint(
  storage: CheckpointStorage,
  id: number,
  options: TestCheckpointOptions = {},
): Promise<CheckpointMetadata> {
  const tasks: TaskStateHandle[] = [];
  for (const subtask of [0, 1]) {
    const task = { vertex: 1, subtask };
    const data = encodeTaskSnapshot({ vertex: 1, subtask, operators: [{ nodeId: 4, watermark: id * 100, operatorState: [{ id, subtask }] }] });
    const written = await storage.writeTaskState(id, taskStateFileName(task), data);
    tasks.push({ task, vertexName: 'Window', ...written, ...(subtask === 0 && options.shared ? { sharedFiles: options.shared } : {}) });
  }
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId: id,
    savepoint: options.savepoint ?? false,
    triggeredAt: 1000 * id,
    completedAt: options.completedAt ?? 1000 * id + 5,
    maxParallelism: 128,
    parallelism: { 0: 1, 1: 2 },
    tasks,
  };
  if (options.commit !== false) await storage.commitMetadata(metadata);
  return metadata;
}

/** The id of the checkpoint `latestComplete` restores, and the [id, reason] of each one it skipped on the way. */
export async function latestWithSkips(storage: CheckpointStorage): Promise<{ id: number | undefined; skipped: [number, string][] }> {
  const skipped: [number, string][] = [];
  const latest = await storage.latestComplete((id, reason) => skipped.push([id, reason]));
  return { id: latest?.checkpointId, skipped };
}
