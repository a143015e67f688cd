import type { Option } from 'commander';
import { DEFAULT_MAX_PARALLELISM } from '../core/index.ts';
import type { FlagSpec, FlagSpecs } from '../api/job.ts';
import { flagName } from './flag-names.ts';
import { flagOptions } from './flag-options.ts';

/** Which job of which control table an `aws` command acts on. */
export const AWS_TARGET_FLAGS = {
  jobId: { type: 'string', required: true, description: "the job's id: its items live in partition job#<id> of the control table" },
  controlTable: { type: 'string', required: true, description: 'the DynamoDB control table of the deployment (pk/sk strings)' },
} as const satisfies FlagSpecs;

/** `sluice aws init`: the cluster flags (the job's own flags come beside them). */
export const AWS_INIT_FLAGS = {
  ...AWS_TARGET_FLAGS,
  checkpointDir: { type: 'string', required: true, description: 'where checkpoints go: s3://bucket/prefix' },
  parallelism: {
    type: 'number',
    integer: true,
    min: 1,
    required: true,
    description: 'P, the number of slots: slot s runs subtask s of every operator; changes only by savepoint and a new init',
  },
  maxParallelism: {
    type: 'number',
    integer: true,
    min: 1,
    default: DEFAULT_MAX_PARALLELISM,
    description: 'number of key groups, split over the slots (fixed for the life of the job state)',
  },
  exchangeStream: {
    type: 'string',
    description: 'internal Kinesis stream of P shards for every keyBy/rebalance/broadcast that is not aligned with the source (needed when the job has one)',
  },
  checkpointIntervalMs: { type: 'number', integer: true, min: 1, default: 5000, description: 'time between checkpoints' },
  checkpointTimeoutMs: { type: 'number', integer: true, min: 1, default: 600_000, description: 'a checkpoint not acknowledged by every slot this long is aborted' },
  tolerableCheckpointFailures: { type: 'number', integer: true, min: 0, default: 3, description: 'consecutive failed checkpoints tolerated' },
  leaseDurationMs: {
    type: 'number',
    integer: true,
    min: 300,
    default: 10_000,
    description: "a slot lease whose counter did not move for this long may be taken by another worker; stored for every worker of the job (a worker's own --lease-duration-ms must match it)",
  },
  fresh: {
    type: 'boolean',
    description: "delete every item of the job's partition first (acks, coordinator state, requests, config; leases are released and control reset, keeping epochs and the lease generation, which name the state folders): the job starts over (from --restore if given)",
  },
  restore: { type: 'string', description: 'the first run starts from this savepoint or checkpoint (a storage URI), e.g. the one "sluice aws stop" printed' },
  dryRun: { type: 'boolean', description: 'check the job and print its slot plan; touch no AWS service' },
} as const satisfies FlagSpecs;

export const AWS_STATUS_FLAGS = {
  ...AWS_TARGET_FLAGS,
  watchLeasesMs: {
    type: 'number',
    integer: true,
    min: 0,
    default: 4000,
    description: 'read the leases twice this far apart to show whose counter moves (a live owner renews every third of the lease); 0 reads once',
  },
  json: { type: 'boolean', description: 'print the status as one JSON document' },
} as const satisfies FlagSpecs;

export const AWS_REQUEST_FLAGS = {
  ...AWS_TARGET_FLAGS,
  timeoutMs: {
    type: 'number',
    integer: true,
    min: 1,
    default: 600_000,
    description: 'give up waiting for the coordinator after this long (exit 1; the request stays queued)',
  },
  json: { type: 'boolean', description: 'print the answered request item as JSON' },
} as const satisfies FlagSpecs;

/** `jobId` -> `SLUICE_JOB_ID`. */
export function envName(key: string): string {
  return `SLUICE_${flagName(key).toUpperCase().replaceAll('-', '_')}`;
}

/**
 * The commander options of a cluster flag. Flags with a value can also come from `SLUICE_<FLAG>` (a container's
 * environment); switches cannot: a `SLUICE_FRESH` left in a shell must never wipe a job's control items.
 */
export function awsFlagOptions(key: string, spec: FlagSpec): Option[] {
  const options = flagOptions(key, spec);
  if (spec.type === 'boolean') return options;
  return options.map((option) => option.env(envName(key)));
}
