import { DEFAULT_MAX_PARALLELISM } from '../core/index.ts';
import type { FlagSpecs } from '../api/job.ts';

/** Flags of `sluice run` itself, available to every job. Job flags may not reuse these names. */
export const COMMON_FLAGS = {
  parallelism: {
    type: 'number',
    integer: true,
    min: 1,
    default: 1,
    description:
      'subtasks per operator; subtask i of every operator runs on worker thread i % --threads, so a parallelism above the processors the machine offers is fine: subtasks share the threads',
  },
  threads: {
    type: 'number',
    integer: true,
    min: 1,
    description:
      'worker threads that run the subtasks (default: one per processor, at most --parallelism; more than --parallelism is lowered to it); above the processors the machine offers, a warning is printed: the threads then take turns on them',
  },
  maxParallelism: {
    type: 'number',
    integer: true,
    min: 1,
    default: DEFAULT_MAX_PARALLELISM,
    description: 'number of key groups: the highest parallelism keyed operators can ever use (fixed for the life of the job state)',
  },
  checkpointDir: {
    type: 'string',
    description:
      'folder for checkpoints: enables exactly-once checkpointing; running the same command again resumes from the latest complete checkpoint',
  },
  checkpointIntervalMs: {
    type: 'number',
    integer: true,
    min: 1,
    default: 5000,
    description: 'time between checkpoints (with --checkpoint-dir)',
  },
  tolerableCheckpointFailures: {
    type: 'number',
    integer: true,
    min: 0,
    default: 3,
    description:
      'consecutive failed checkpoints tolerated (e.g. the checkpoint folder unwritable or its disk full); one more fails the job (it restarts as --restart-strategy says, then exits 1 naming the cause); a completed checkpoint resets the count',
  },
  fresh: {
    type: 'boolean',
    description: 'discard the checkpoints in --checkpoint-dir and start from the beginning (or from --restore)',
  },
  allowReplay: {
    type: 'boolean',
    description:
      'when the newest checkpoints in --checkpoint-dir are corrupt, restore from the newest usable older one anyway: the output those corrupt checkpoints committed is written again (duplicates). Without it such a start is refused (exit 2). Starting from the beginning while checkpoints exist always needs --fresh',
  },
  allowNonRestoredState: {
    type: 'boolean',
    description:
      'restore although the checkpoint or savepoint has state of operators the job no longer has (found by operator name), dropping that state; without it such a restore is refused (exit 2)',
  },
  restore: {
    type: 'string',
    description:
      'start from this savepoint directory (or chk-* checkpoint directory) instead of the latest checkpoint in --checkpoint-dir; parallelism may differ, --max-parallelism may not (with --checkpoint-dir)',
  },
  savepointDir: {
    type: 'string',
    description: 'folder for savepoints taken with "sluice savepoint" / "sluice stop" (with --checkpoint-dir; default: <checkpoint-dir>/savepoints)',
  },
  stateBackend: {
    type: 'string',
    choices: ['memory', 'rocksdb'],
    default: 'memory',
    description: 'where keyed state lives: memory (the JS heap) or rocksdb (embedded RocksDB with a write-behind cache and incremental checkpoints, for state larger than memory)',
  },
  stateDir: {
    type: 'string',
    description:
      'folder for RocksDB state (with --state-backend rocksdb; default ./sluice-state); kept across runs so a restart can reuse it (local recovery); one running job per folder',
  },
  restPort: {
    type: 'number',
    integer: true,
    min: 0,
    default: 0,
    description: 'port of the REST API on 127.0.0.1 (job status, checkpoints, savepoints, stop); 0 picks a free port',
  },
  restartStrategy: {
    type: 'string',
    choices: ['fixed-delay', 'exponential-backoff', 'none'],
    default: 'fixed-delay',
    description: 'how a failed job restarts from its latest checkpoint (with --checkpoint-dir)',
  },
  restartAttempts: { type: 'number', integer: true, min: 0, default: 3, description: 'restarts before the job fails' },
  restartDelayMs: {
    type: 'number',
    integer: true,
    min: 0,
    default: 1000,
    description: 'delay before a restart (the first one, with exponential-backoff, which doubles it each time)',
  },
  restartMaxDelayMs: {
    type: 'number',
    integer: true,
    min: 0,
    default: 60000,
    description: 'longest delay between restarts with exponential-backoff',
  },
} as const satisfies FlagSpecs;

/** Keys a job flag may not use: the common flags and commander's `--help`. */
export const RESERVED_FLAG_KEYS: ReadonlySet<string> = new Set([...Object.keys(COMMON_FLAGS), 'help']);
