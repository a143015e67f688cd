import { ConfigError } from '../../core/index.ts';
import type { CheckpointCoordinatorOptions } from '../../checkpoint/coordinator-options.ts';

/** Checkpointing of an embedded job. Without it, a job keeps no state across failures. */
export interface CheckpointingConfig extends CheckpointCoordinatorOptions {
  /** Folder of the checkpoints; the same folder on the next run resumes from the latest complete one. */
  dir: string;
  /** Discard the folder's existing checkpoints and start from scratch (or from `restore`). @default false */
  fresh?: boolean;
  /**
   * Accept restoring from an older checkpoint (or the savepoint the job was restored from) when newer committed
   * checkpoints are corrupt, although the sinks then receive again the output those committed. Without it such a
   * restore is refused. It never allows starting from the beginning while checkpoints exist: that takes `fresh`.
   * @default false
   */
  allowReplay?: boolean;
  /**
   * Drop the state of operators the restored checkpoint or savepoint has and the job no longer has (Flink's
   * `--allow-non-restored-state`). Without it such a restore is refused. @default false
   */
  allowNonRestoredState?: boolean;
  /** Folder of savepoints; never cleaned up by retention. @default `<dir>/savepoints` */
  savepointDir?: string;
  /**
   * A savepoint directory (or a `chk-…` checkpoint directory) to start from instead of the folder's latest
   * checkpoint. Once a checkpoint of the restored job completed in `dir`, a run with the same `restore` resumes
   * from that checkpoint instead (see docs/checkpoints.md). @default none
   */
  restore?: string;
}

/** Where savepoints go when `savepointDir` is not set. */
export const DEFAULT_SAVEPOINT_SUBDIR = 'savepoints';

/** What happens when a task fails while the job runs. */
export type RestartStrategy =
  | { readonly kind: 'none' }
  /** Restart from the latest complete checkpoint after `delayMs`, at most `attempts` times. */
  | { readonly kind: 'fixed-delay'; readonly attempts: number; readonly delayMs: number }
  /** Like fixed-delay, with the delay multiplied by `multiplier` after each attempt, up to `maxDelayMs`. */
  | {
      readonly kind: 'exponential-backoff';
      readonly attempts: number;
      readonly initialDelayMs: number;
      readonly maxDelayMs: number;
      readonly multiplier: number;
    };

/** With checkpointing: 3 restarts 1 s apart. Without checkpointing a job never restarts (it would replay its output). */
export const DEFAULT_RESTART_STRATEGY: RestartStrategy = { kind: 'fixed-delay', attempts: 3, delayMs: 1000 };

export function checkRestartStrategy(strategy: RestartStrategy): RestartStrategy {
  const int = (name: string, v: number, min: number) => {
    if (!Number.isSafeInteger(v) || v < min) throw new ConfigError(`restart strategy: ${name} must be an integer >= ${min}, got ${v}`);
  };
  if (strategy.kind === 'fixed-delay') {
    int('attempts', strategy.attempts, 0);
    int('delayMs', strategy.delayMs, 0);
  } else if (strategy.kind === 'exponential-backoff') {
    int('attempts', strategy.attempts, 0);
    int('initialDelayMs', strategy.initialDelayMs, 0);
    int('maxDelayMs', strategy.maxDelayMs, strategy.initialDelayMs);
    if (!(strategy.multiplier >= 1)) throw new ConfigError(`restart strategy: multiplier must be >= 1, got ${strategy.multiplier}`);
  }
  return strategy;
}

/** Delay before restart number `attempt` (1-based), or undefined when no restart is left. */
export function restartDelay(strategy: RestartStrategy, attempt: number): number | undefined {
  switch (strategy.kind) {
    case 'none':
      return undefined;
    case 'fixed-delay':
      return attempt <= strategy.attempts ? strategy.delayMs : undefined;
    case 'exponential-backoff':
      return attempt <= strategy.attempts
        ? Math.min(strategy.maxDelayMs, strategy.initialDelayMs * strategy.multiplier ** (attempt - 1))
        : undefined;
  }
}
