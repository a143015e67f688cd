import type { StorageLease } from '../storage/checkpoint-storage.ts';
import { DirectoryLock } from '../storage/fs/directory-lock.ts';
import { isRemoteLocation, openCheckpointStorage } from './restore/open-checkpoint-storage.ts';

/** The locks a running job holds on its folders; released when the job ends (a killed job's are taken over). */
export interface JobFolderLocks {
  release(): Promise<void>;
}

/**
 * Makes the job the only one using its local checkpoint folder and its RocksDB state folder, before it reads or
 * cleans up anything there: a second job on the same checkpoint folder would resume the first one's checkpoint
 * and delete its checkpoints, and a second job on the same state folder could delete the first one's live
 * databases. One owner per state folder, as per checkpoint folder: jobs running side by side need their own
 * --state-dir, which keeps the rule simple to state and to check. Throws DirectoryInUseError (exit 2) naming the
 * running holder. A checkpoint location on S3 is leased through its storage (a DynamoDB item in the commit table);
 * without a commit table it is not locked (see docs/checkpoints.md).
 */
export async function lockJobFolders(folders: {
  readonly checkpointDir: string | undefined;
  /** The state directory of a RocksDB job; undefined on the memory backend. */
  readonly stateDir: string | undefined;
}): Promise<JobFolderLocks> {
  const held: StorageLease[] = [];
  const release = async (): Promise<void> => {
    // Each lock is released even when another's release fails (a lock left held here blocks later jobs).
    let failure: unknown;
    for (const lock of held.splice(0).reverse()) {
      try {
        await lock.release();
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  };
  try {
    const { checkpointDir, stateDir } = folders;
    if (checkpointDir !== undefined && isRemoteLocation(checkpointDir)) {
      const storage = await openCheckpointStorage(checkpointDir);
      const close = (): void => (storage as Partial<{ close(): void }>).close?.();
      const lease = await storage.acquireLease?.().catch((err: unknown) => {
        close();
        throw err;
      });
      if (lease === undefined) close();
      else held.push({ release: () => lease.release().finally(close) });
    } else if (checkpointDir !== undefined) {
      held.push(
        await DirectoryLock.acquire(
          checkpointDir,
          `the checkpoint directory ${checkpointDir}`,
          'Two jobs on one checkpoint directory would resume and delete each other\'s checkpoints: wait for that job to end (or stop it with "sluice stop --checkpoint-dir DIR"), or pass another --checkpoint-dir.',
        ),
      );
    }
    if (stateDir !== undefined) {
      held.push(
        await DirectoryLock.acquire(
          stateDir,
          `the state directory ${stateDir}`,
          'Its RocksDB databases there are open: wait for that job to end, or pass another --state-dir.',
        ),
      );
    }
  } catch (err) {
    await release();
    throw err;
  }
  return { release };
}
