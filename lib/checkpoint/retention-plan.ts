import { ConfigError } from '../core/index.ts';
import { parseTaskStatePath } from './naming.ts';
import { SharedFileRegistry } from './shared-file-registry.ts';
import type { CheckpointMetadata } from './types.ts';

/** A checkpoint as a storage found it: complete with metadata, or corrupt / incomplete without. */
export type FoundCheckpoint =
  | { readonly status: 'complete'; readonly checkpointId: number; readonly metadata: CheckpointMetadata }
  | { readonly status: 'corrupt' | 'incomplete'; readonly checkpointId: number };

export interface RetentionPlan {
  /** Checkpoint ids to discard, ascending. */
  readonly discard: number[];
  /** Shared files that lose their last reference once those are gone (delete them after the checkpoints). */
  readonly freedSharedFiles: string[];
}

/**
 * Which checkpoints retention removes (the same rule for every storage): keep the newest `retain` complete
 * checkpoints (savepoints neither counted nor removed); discard everything older (complete, corrupt or abandoned)
 * except checkpoints whose files a retained one's metadata points into. Shared files go when no remaining
 * checkpoint lists them.
 */
export function planRetention(found: readonly FoundCheckpoint[], retain: number): RetentionPlan {
  if (!Number.isSafeInteger(retain) || retain < 1) {
    throw new ConfigError(`the number of retained checkpoints must be an integer of at least 1, got ${String(retain)}`);
  }
  const complete = found.filter((c): c is Extract<FoundCheckpoint, { status: 'complete' }> => c.status === 'complete');
  const retained = complete.filter((c) => !c.metadata.savepoint).sort((a, b) => b.checkpointId - a.checkpointId).slice(0, retain);
  const oldestRetained = retained[retain - 1];
  if (oldestRetained === undefined) return { discard: [], freedSharedFiles: [] };
  const referenced = new Set<number>();
  for (const checkpoint of retained) {
    for (const task of checkpoint.metadata.tasks) {
      const parsed = parseTaskStatePath(task.path);
      if (parsed?.dir.kind === 'checkpoint') referenced.add(parsed.dir.checkpointId);
    }
  }
  const registry = new SharedFileRegistry(complete.map((c) => c.metadata));
  const discard: number[] = [];
  const freedSharedFiles: string[] = [];
  for (const checkpoint of found) {
    if (checkpoint.checkpointId >= oldestRetained.checkpointId || referenced.has(checkpoint.checkpointId)) continue;
    if (checkpoint.status === 'complete' && checkpoint.metadata.savepoint) continue;
    discard.push(checkpoint.checkpointId);
    if (checkpoint.status === 'complete') freedSharedFiles.push(...registry.release(checkpoint.metadata));
  }
  return { discard: discard.sort((a, b) => a - b), freedSharedFiles };
}
