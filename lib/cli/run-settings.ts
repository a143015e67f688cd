import { ConfigError } from '../core/index.ts';
import type { CheckpointingConfig, RestartStrategy } from '../runtime/checkpointing/checkpointing-config.ts';

/** Checkpointing and restarts as the common flags set them. */
export interface RunSettings {
  readonly checkpointing: CheckpointingConfig | undefined;
  readonly restart: RestartStrategy;
}

export function toRunSettings(common: Record<string, unknown>): RunSettings {
  const dir = common['checkpointDir'] as string | undefined;
  if (dir === undefined) {
    if (common['fresh'] === true) throw new ConfigError('--fresh needs --checkpoint-dir: it discards the checkpoints in that folder');
    // Without checkpoints a restart would replay everything into output already written.
    return { checkpointing: undefined, restart: { kind: 'none' } };
  }
  const attempts = common['restartAttempts'] as number;
  const delayMs = common['restartDelayMs'] as number;
  const kind = common['restartStrategy'] as string;
  const restart: RestartStrategy =
    kind === 'none'
      ? { kind: 'none' }
      : kind === 'exponential-backoff'
        ? { kind, attempts, initialDelayMs: delayMs, maxDelayMs: Math.max(delayMs, common['restartMaxDelayMs'] as number), multiplier: 2 }
        : { kind: 'fixed-delay', attempts, delayMs };
  return {
    checkpointing: { dir, intervalMs: common['checkpointIntervalMs'] as number, fresh: common['fresh'] === true },
    restart,
  };
}
