import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { CheckpointStorage } from '../../storage/checkpoint-storage.ts';
import { FileCheckpointStorage } from '../../storage/fs/file-checkpoint-storage.ts';
import type { CheckpointingConfig } from './checkpointing-config.ts';
import { checkCompatible } from './restore-plan.ts';

export interface PreparedCheckpointing {
  readonly storage: CheckpointStorage;
  /** The checkpoint to start from, if any. */
  readonly latest: CheckpointMetadata | undefined;
  /** Highest id present in storage: new checkpoints get higher ones. */
  readonly lastCheckpointId: number;
  readonly retainedCheckpointIds: number[];
}

/**
 * At start-up: removes what crashed checkpoints left, finds the latest complete checkpoint (skipping corrupt ones
 * with a warning), and checks it belongs to this job. `--fresh` discards the folder's checkpoints instead.
 */
export async function prepareCheckpointing(
  config: CheckpointingConfig,
  plan: PhysicalPlan,
  log: (line: string) => void,
): Promise<PreparedCheckpointing> {
  const storage = new FileCheckpointStorage(config.dir);
  const removed = await storage.removeIncomplete();
  let listed = await storage.list();
  let lastCheckpointId = Math.max(0, ...removed, ...listed.map((c) => c.checkpointId));
  if (config.fresh === true && listed.length > 0) {
    for (const c of listed) await storage.discard(c.checkpointId);
    log(`--fresh: discarded ${listed.length} checkpoint(s) in ${storage.location}`);
    listed = [];
  }
  const latest =
    config.fresh === true
      ? undefined
      : await storage.latestComplete((id, reason) => log(`warning: skipping checkpoint ${id}: ${reason}`));
  if (latest !== undefined) checkCompatible(latest, plan, storage.location);
  lastCheckpointId = Math.max(lastCheckpointId, latest?.checkpointId ?? 0);
  const retainedCheckpointIds = listed
    .filter((c) => c.status === 'complete' && !c.metadata.savepoint)
    .map((c) => c.checkpointId);
  return { storage, latest, lastCheckpointId, retainedCheckpointIds };
}
