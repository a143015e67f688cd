import { RemovalPolicy } from 'aws-cdk-lib';
import { ConfigError } from '../lib/core/errors.ts';
import type { SluiceJobProps, StateStorage, WorkerNetwork, WorkersMode } from './constructs/sluice-job-props.ts';

/** Reads `-c name=value` context (or cdk.json's) as the job's props: strings on the command line, JSON in cdk.json. */
export type ContextReader = (name: string) => unknown;

function text(read: ContextReader, name: string): string | undefined {
  const value = read(name);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new ConfigError(`cdk context "${name}" must be a string or number, got ${JSON.stringify(value)}`);
  }
  return String(value);
}

function number(read: ContextReader, name: string): number | undefined {
  const raw = text(read, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new ConfigError(`cdk context "${name}" must be a number, got "${raw}" (e.g. -c ${name}=4)`);
  return value;
}

function bool(read: ContextReader, name: string): boolean | undefined {
  const raw = text(read, name);
  if (raw === undefined) return undefined;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`cdk context "${name}" must be true or false, got "${raw}"`);
  return raw === 'true';
}

/** Job flags: a JSON array in cdk.json, or one string split on spaces on the command line (`-c jobFlags="--a 1"`). */
function flags(read: ContextReader): string[] | undefined {
  const value = read('jobFlags');
  if (value === undefined || value === '') return undefined;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  if (typeof value === 'string') return value.split(/\s+/).filter((f) => f !== '');
  throw new ConfigError(`cdk context "jobFlags" must be a string or an array of strings, got ${JSON.stringify(value)}`);
}

const REMOVAL: Record<string, RemovalPolicy> = { retain: RemovalPolicy.RETAIN, destroy: RemovalPolicy.DESTROY, snapshot: RemovalPolicy.SNAPSHOT };

/** The SluiceJob props of the app (infra/app.ts) from the CDK context; `job` is required. */
export function jobPropsFromContext(read: ContextReader): SluiceJobProps {
  const jobModule = text(read, 'job');
  if (jobModule === undefined) throw new ConfigError('cdk context "job" is missing: give the job file, e.g. npx cdk synth -c job=examples/kinesis-to-dynamodb.ts');
  const removal = text(read, 'removalPolicy');
  if (removal !== undefined && REMOVAL[removal] === undefined) {
    throw new ConfigError(`cdk context "removalPolicy" must be one of ${Object.keys(REMOVAL).join(', ')}, got "${removal}"`);
  }
  const sinkTables = text(read, 'sinkTables');
  const optional = {
    jobId: text(read, 'jobId'),
    jobFlags: flags(read),
    parallelism: number(read, 'parallelism'),
    workers: number(read, 'workers'),
    cpu: number(read, 'cpu'),
    memoryMiB: number(read, 'memoryMiB'),
    stream: text(read, 'stream'),
    exchange: bool(read, 'exchange'),
    stateStorage: text(read, 'stateStorage') as StateStorage | undefined,
    checkpointIntervalMs: number(read, 'checkpointIntervalMs'),
    network: text(read, 'network') as WorkerNetwork | undefined,
    workersMode: text(read, 'workersMode') as WorkersMode | undefined,
    removalPolicy: removal === undefined ? undefined : REMOVAL[removal],
    sinkTables: sinkTables === undefined ? undefined : sinkTables.split(',').map((t) => t.trim()).filter((t) => t !== ''),
  };
  return { jobModule, ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)) };
}
