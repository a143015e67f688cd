import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigError } from '../../lib/core/index.ts';
import { awsClientConfig } from '../../lib/connectors/aws/client-config.ts';
import { DEFAULT_SINK_COMMIT_REGISTRY, type SinkCommitRegistry } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { createS3Client } from '../../lib/connectors/aws/s3/s3-client.ts';

/**
 * What every coordinator handler runs with: the job, its control table, the clients, the clock. Built once per
 * Lambda container (module scope) from the environment; tests and the local runner may build their own.
 */
export interface CoordinatorSettings {
  /** SLUICE_JOB_ID */
  readonly jobId: string;
  /** SLUICE_CONTROL_TABLE */
  readonly controlTable: string;
  /** SLUICE_CHECKPOINT_DIR: overrides `config.checkpointDir` (s3://bucket/prefix[?commitTable=…]). @default the config's */
  readonly checkpointDir: string | undefined;
  /** SLUICE_ACK_POLL_MS: how often a cycle looks for acks while a checkpoint is in flight. @default 1000 */
  readonly ackPollMs: number;
  /** SLUICE_CYCLE_SECONDS: a cycles execution returns after this long (Express runs 5 minutes at most). @default 240 */
  readonly cycleSeconds: number;
  readonly dynamo: DynamoDBClient;
  readonly s3: S3Client;
  readonly registry: SinkCommitRegistry;
  readonly now: () => number;
  /** One JSON line per notable event. @default console.log */
  readonly log: (event: Record<string, unknown>) => void;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') throw new ConfigError(`the coordinator needs ${name} in its environment`);
  return value;
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new ConfigError(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): CoordinatorSettings {
  const checkpointDir = env['SLUICE_CHECKPOINT_DIR'];
  return {
    jobId: required(env, 'SLUICE_JOB_ID'),
    controlTable: required(env, 'SLUICE_CONTROL_TABLE'),
    checkpointDir: checkpointDir === undefined || checkpointDir === '' ? undefined : checkpointDir,
    ackPollMs: positive(env, 'SLUICE_ACK_POLL_MS', 1000),
    cycleSeconds: positive(env, 'SLUICE_CYCLE_SECONDS', 240),
    dynamo: new DynamoDBClient(awsClientConfig('dynamodb')),
    s3: createS3Client(undefined, undefined),
    registry: DEFAULT_SINK_COMMIT_REGISTRY,
    now: () => Date.now(),
    log: (event) => console.log(JSON.stringify(event)),
  };
}

/**
 * The settings the handlers use: built from the environment on first use, or set by a composition root (the local
 * runner, tests) through `useSettings`. Rebuilt when the job or table in the environment changes.
 */
let current: CoordinatorSettings | undefined;
let explicit = false;

export function useSettings(settings: CoordinatorSettings | undefined): void {
  current = settings;
  explicit = settings !== undefined;
}

export function settings(): CoordinatorSettings {
  const env = process.env;
  if (current !== undefined && (explicit || (current.jobId === env['SLUICE_JOB_ID'] && current.controlTable === env['SLUICE_CONTROL_TABLE']))) {
    return current;
  }
  current = settingsFromEnv(env);
  return current;
}
