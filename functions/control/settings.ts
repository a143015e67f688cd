import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../../lib/core/index.ts';
import { awsClientConfig } from '../../lib/connectors/aws/client-config.ts';

/**
 * What the control state machine's handlers run with: the job and its control table (the coordinator's variables,
 * functions/coordinator/settings.ts), a DynamoDB client and the clock. Only the table half: no S3, no coordinator,
 * so the bundles stay small.
 */
export interface ControlSettings {
  /** SLUICE_JOB_ID */
  readonly jobId: string;
  /** SLUICE_CONTROL_TABLE */
  readonly controlTable: string;
  readonly dynamo: DynamoDBClient;
  readonly now: () => number;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') throw new ConfigError(`the control state machine's handlers need ${name} in their environment`);
  return value;
}

export function controlSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): ControlSettings {
  return {
    jobId: required(env, 'SLUICE_JOB_ID'),
    controlTable: required(env, 'SLUICE_CONTROL_TABLE'),
    dynamo: new DynamoDBClient(awsClientConfig('dynamodb')),
    now: () => Date.now(),
  };
}

let current: ControlSettings | undefined;

/** Tests and local runners set their own settings; `undefined` goes back to the environment. */
export function useControlSettings(settings: ControlSettings | undefined): void {
  current = settings;
}

/** Built from the environment once per Lambda container. */
export function controlSettings(): ControlSettings {
  current ??= controlSettingsFromEnv();
  return current;
}
