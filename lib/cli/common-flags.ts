import { DEFAULT_MAX_PARALLELISM } from '../core/index.ts';
import type { FlagSpecs } from '../api/job.ts';

/** Flags of `sluice run` itself, available to every job. Job flags may not reuse these names. */
export const COMMON_FLAGS = {
  parallelism: {
    type: 'number',
    integer: true,
    min: 1,
    default: 1,
    description: 'subtasks per operator; subtask i of every operator runs on worker thread i',
  },
  maxParallelism: {
    type: 'number',
    integer: true,
    min: 1,
    default: DEFAULT_MAX_PARALLELISM,
    description: 'number of key groups: the highest parallelism keyed operators can ever use (fixed for the life of the job state)',
  },
} as const satisfies FlagSpecs;

/** Keys a job flag may not use: the common flags and commander's `--help`. */
export const RESERVED_FLAG_KEYS: ReadonlySet<string> = new Set([...Object.keys(COMMON_FLAGS), 'help']);
