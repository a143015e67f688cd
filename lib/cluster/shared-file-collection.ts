import { sharedFilesOf } from '../checkpoint/shared-file-registry.ts';
import type { CheckpointMetadata } from '../checkpoint/types.ts';

/**
 * Shared state files the coordinator may delete: listed by no complete checkpoint and older than `minAgeMs`
 * (twice the checkpoint timeout), because a slot uploads the shared files of a checkpoint in flight before any
 * metadata lists them, and no checkpoint stays in flight longer than the timeout. Only the coordinator deletes them
 * (a worker never does: on shared storage it cannot know what other slots' checkpoints refer to).
 */
export function collectableSharedFiles(
  found: readonly { readonly path: string; readonly modifiedAt: number }[],
  complete: readonly Pick<CheckpointMetadata, 'tasks'>[],
  now: number,
  minAgeMs: number,
): string[] {
  const referenced = new Set<string>();
  for (const metadata of complete) for (const path of sharedFilesOf(metadata)) referenced.add(path);
  return found.filter((f) => !referenced.has(f.path) && now - f.modifiedAt >= minAgeMs).map((f) => f.path);
}
