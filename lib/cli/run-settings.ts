import { ConfigError } from '../core/index.ts';
import type { CheckpointingConfig, RestartStrategy } from '../runtime/checkpoint-driver/checkpointing-config.ts';
import { compileStateBackendConfig, type StateBackendConfig } from '../runtime/state-backend-config.ts';

/** Checkpointing, restarts and the REST API as the common flags set them. */
export interface RunSettings {
  readonly checkpointing: CheckpointingConfig | undefined;
  readonly restart: RestartStrategy;
  /** Port of the REST API on 127.0.0.1; 0 picks a free one. */
  readonly restPort: number;
  readonly stateBackend: StateBackendConfig;
}

/** Flags that only make sense with --checkpoint-dir, and why. */
const NEED_CHECKPOINT_DIR: readonly [key: string, flag: string, why: string][] = [
  ['fresh', '--fresh', 'it discards the checkpoints in that folder'],
  ['allowReplay', '--allow-replay', 'it lets a restore pass over corrupt checkpoints in that folder'],
  ['allowNonRestoredState', '--allow-non-restored-state', 'it drops state of a restored checkpoint or savepoint'],
  ['restore', '--restore', 'a restored job keeps its exactly-once guarantees only if it checkpoints'],
  ['savepointDir', '--savepoint-dir', 'savepoints are checkpoints, which a job takes only when it checkpoints'],
];

export function toRunSettings(common: Record<string, unknown>): RunSettings {
  const restPort = common['restPort'] as number;
  if (restPort > 65535) throw new ConfigError(`--rest-port must be a port number (0 to 65535), got ${restPort}`);
  const stateDir = common['stateDir'] as string | undefined;
  const kind = common['stateBackend'] as StateBackendConfig['kind'];
  if (stateDir !== undefined && kind !== 'rocksdb') {
    throw new ConfigError('--state-dir needs --state-backend rocksdb: the memory backend keeps state on the heap');
  }
  const stateBackend = compileStateBackendConfig({ kind, ...(stateDir === undefined ? {} : { dir: stateDir }) });
  const dir = common['checkpointDir'] as string | undefined;
  if (dir === undefined) {
    for (const [key, flag, why] of NEED_CHECKPOINT_DIR) {
      const value = common[key];
      if (value !== undefined && value !== false) throw new ConfigError(`${flag} needs --checkpoint-dir: ${why}`);
    }
    // Without checkpoints a restart would replay everything into output already written.
    return { checkpointing: undefined, restart: { kind: 'none' }, restPort, stateBackend };
  }
  const attempts = common['restartAttempts'] as number;
  const delayMs = common['restartDelayMs'] as number;
  const strategy = common['restartStrategy'] as string;
  const restart: RestartStrategy =
    strategy === 'none'
      ? { kind: 'none' }
      : strategy === 'exponential-backoff'
        ? { kind: strategy, attempts, initialDelayMs: delayMs, maxDelayMs: Math.max(delayMs, common['restartMaxDelayMs'] as number), multiplier: 2 }
        : { kind: 'fixed-delay', attempts, delayMs };
  const savepointDir = common['savepointDir'] as string | undefined;
  const restore = common['restore'] as string | undefined;
  return {
    checkpointing: {
      dir,
      intervalMs: common['checkpointIntervalMs'] as number,
      tolerableFailures: common['tolerableCheckpointFailures'] as number,
      fresh: common['fresh'] === true,
      allowReplay: common['allowReplay'] === true,
      allowNonRestoredState: common['allowNonRestoredState'] === true,
      ...(savepointDir === undefined ? {} : { savepointDir }),
      ...(restore === undefined ? {} : { restore }),
    },
    restart,
    restPort,
    stateBackend,
  };
}
