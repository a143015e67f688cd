import { SluiceError } from '../../core/index.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { TaskId } from '../../checkpoint/types.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { CheckpointStorage } from '../../storage/checkpoint-storage.ts';
import { planRestart, planRestore, type CorruptCheckpoint, type RestoreStart } from '../../checkpoint/restore-plan.ts';
import { restartDelay, type RestartStrategy } from '../checkpoint-driver/checkpointing-config.ts';

export function allTasks(plan: PhysicalPlan): TaskId[] {
  return plan.vertices.flatMap((v) => Array.from({ length: v.parallelism }, (_, subtask) => ({ vertex: v.id, subtask })));
}

export function sourceTasks(plan: PhysicalPlan): TaskId[] {
  return allTasks(plan).filter((t) => plan.vertices[t.vertex]!.source !== undefined);
}

/** The error behind the runners' JOB_FAILED wrappers. */
function rootFailure(err: unknown): unknown {
  let current = err;
  while (current instanceof SluiceError && current.code === 'JOB_FAILED' && current.cause !== undefined) current = current.cause;
  return current;
}

/**
 * Whether a job failure is one no restart can get past: a task that rejected its configuration (every attempt fails
 * the same way), or storage fenced by a newer run (FENCED: this run is the zombie; restarting would fence the new
 * owner in turn and fight it over the same checkpoint ids).
 */
function isFinal(err: unknown): boolean {
  const root = rootFailure(err);
  return root instanceof SluiceError && (root.code === 'CONFIG' || root.code === 'FENCED');
}

/**
 * Runs attempts of a job until one succeeds or the restart strategy gives up. Each restart starts from the
 * latest complete checkpoint in storage (taken after `restartFloor`), or else from where the first attempt started.
 */
export async function runAttempts<T>(options: {
  strategy: RestartStrategy;
  storage: CheckpointStorage;
  first: CheckpointMetadata | undefined;
  /**
   * When set, a restart takes a checkpoint of `storage` only if its id is above this, else `first` again (a
   * savepoint the run was restored from). @default every checkpoint of `storage` counts
   */
  restartFloor?: number;
  /** Pass over corrupt checkpoints at a restart although their output is replayed (see planRestore). @default false */
  allowReplay?: boolean;
  log: (line: string) => void;
  attempt: (restoreFrom: CheckpointMetadata | undefined) => Promise<T>;
}): Promise<T> {
  let restoreFrom = options.first;
  for (let attempt = 1; ; attempt++) {
    try {
      return await options.attempt(restoreFrom);
    } catch (err) {
      // A configuration error (a refused output file, a bad path, state the restored checkpoint contradicts) fails
      // every attempt the same way, and a fenced run no longer owns its storage: report it now. A fenced run fails
      // with the FencedError itself, so the cause is not buried under a task's wrapper.
      const delay = isFinal(err) ? undefined : restartDelay(options.strategy, attempt);
      if (delay === undefined) {
        const root = rootFailure(err);
        throw root instanceof SluiceError && root.code === 'FENCED' ? root : err;
      }
      options.log(`job failed: ${err instanceof Error ? err.message : String(err)}; restart ${attempt} in ${delay} ms`);
      await new Promise((r) => setTimeout(r, delay));
      const corrupt: CorruptCheckpoint[] = [];
      let latest: CheckpointMetadata | undefined;
      try {
        latest = await options.storage.latestComplete((checkpointId, reason) => corrupt.push({ checkpointId, reason }));
      } catch (storageError) {
        // Storage that cannot be read cannot be restarted from; the attempt's failure usually says why.
        options.log(`cannot restart: ${storageError instanceof Error ? storageError.message : String(storageError)}`);
        throw err;
      }
      const floor = options.restartFloor;
      restoreFrom = planRestart({ floor, latestComplete: latest?.checkpointId }) === 'latest' ? latest : options.first;
      // The same rule as at start-up: a restart must not silently replay what a corrupt checkpoint committed.
      const start: RestoreStart =
        restoreFrom === undefined
          ? { kind: 'beginning' }
          : restoreFrom === latest
            ? { kind: 'checkpoint', checkpointId: restoreFrom.checkpointId }
            : { kind: 'savepoint', description: `the savepoint of checkpoint ${restoreFrom.checkpointId}` };
      const plan = planRestore({
        location: options.storage.location,
        corrupt,
        ...(floor === undefined ? {} : { floor }),
        start,
        allowReplay: options.allowReplay === true,
      });
      for (const line of plan.warnings) options.log(line);
    }
  }
}
