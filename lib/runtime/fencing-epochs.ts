import { nextFencingToken, type FencingToken } from '../core/fencing.ts';
import type { CheckpointMetadata } from '../checkpoint/types.ts';
import type { CheckpointStorage } from '../storage/checkpoint-storage.ts';

/**
 * The highest fencing epoch recorded for a job: the storage's fence (raised by every attempt, see
 * `CheckpointCatalog.fence`), the metadata of its checkpoints in `storage` and of the savepoint it restores
 * (`restored`, which may live elsewhere). -1 when nothing records one (checkpoints written before tokens were
 * recorded count as epoch 0 once they exist). A run calls this once, before its first attempt.
 */
export async function highestRecordedEpoch(
  storage: Pick<CheckpointStorage, 'list' | 'currentFence'>,
  restored: CheckpointMetadata | undefined,
): Promise<number> {
  let highest = restored === undefined ? -1 : (restored.fencing?.epoch ?? 0);
  highest = Math.max(highest, (await storage.currentFence())?.epoch ?? -1);
  for (const stored of await storage.list()) {
    if (stored.status === 'complete') highest = Math.max(highest, stored.metadata.fencing?.epoch ?? 0);
  }
  return highest;
}

/** The highest epoch issued in this process so far (see issueFencingToken). */
let lastIssuedEpoch = -1;

/**
 * The token of the next attempt. A restart within the run (`previous` given) takes the next epoch,
 * `nextFencingToken(previous)`. The first attempt of a run starts above `highestRecorded` (what storage records of
 * earlier runs), above any token issued in this process before, and never below the wall clock in milliseconds.
 * The clock floor keeps epochs growing across runs where nothing is recorded yet (no checkpointing, or a run that
 * crashed before its first checkpoint), so names built from `fencingTag` (part files, DynamoDB commit markers)
 * never repeat those of an earlier run; the process-wide floor keeps two jobs started in the same millisecond apart.
 */
export function issueFencingToken(previous: FencingToken | undefined, highestRecorded = -1, now = Date.now()): FencingToken {
  const token =
    previous === undefined
      ? nextFencingToken(undefined, Math.max(highestRecorded, lastIssuedEpoch, Math.floor(now) - 1))
      : nextFencingToken(previous, highestRecorded);
  lastIssuedEpoch = Math.max(lastIssuedEpoch, token.epoch);
  return token;
}
