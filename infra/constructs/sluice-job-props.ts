import { RemovalPolicy } from 'aws-cdk-lib';
import type { IVpc } from 'aws-cdk-lib/aws-ec2';
import type { ContainerImage } from 'aws-cdk-lib/aws-ecs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { ConfigError } from '../../lib/core/errors.ts';

/** Where the slot workers keep their RocksDB databases. */
export type StateStorage = 'efs' | 'ephemeral';
/** How worker tasks reach AWS: public subnets with public IPs (no NAT cost), or private subnets behind one NAT. */
export type WorkerNetwork = 'public-subnets' | 'private-nat';
/** 'fargate' runs the workers as an ECS service; 'external' creates no ECS, EFS or VPC (LocalStack, workers elsewhere). */
export type WorkersMode = 'fargate' | 'external';

export interface SluiceJobProps {
  /** The job file, relative to the repository root (what `sluice worker` and `sluice aws init` load). */
  readonly jobModule: string;
  /** The job's own flags, passed to every worker after the job file. @default [] */
  readonly jobFlags?: readonly string[];
  /** The job id in the control table (partition `job#<id>`). @default the job file's name without extension */
  readonly jobId?: string;
  /** Slots (P): every vertex runs at P; also the shard count of a new source stream and of the exchange stream. @default 4 */
  readonly parallelism?: number;
  /** Fargate worker tasks. @default 2 */
  readonly workers?: number;
  /** CPU units of one worker task (a valid Fargate value). @default 1024 */
  readonly cpu?: number;
  /** Memory of one worker task in MiB (valid for `cpu`). @default 2048 */
  readonly memoryMiB?: number;
  /** ARN of an existing source stream. @default a new stream with `parallelism` shards */
  readonly stream?: string;
  /** Create the internal exchange stream of P shards (jobs with `exchange` edges). @default false */
  readonly exchange?: boolean;
  /** @default 'efs' */
  readonly stateStorage?: StateStorage;
  /** The checkpoint interval the job is deployed with (`sluice aws init --checkpoint-interval-ms`); alarms use it. @default 60000 */
  readonly checkpointIntervalMs?: number;
  /** @default 'public-subnets' */
  readonly network?: WorkerNetwork;
  /** An existing VPC for the workers. @default a new VPC laid out as `network` says */
  readonly vpc?: IVpc;
  /** @default 'fargate' */
  readonly workersMode?: WorkersMode;
  /** What happens to the data (bucket, tables, EFS, source stream) when the stack is deleted. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** Alarms notify this topic. @default alarms without actions */
  readonly alarmTopic?: ITopic;
  /** Names of the DynamoDB tables the job's two-phase-commit sinks write (CommitSinks commits into them). @default [] */
  readonly sinkTables?: readonly string[];
  /** The worker image. @default built from the repository's Dockerfile */
  readonly workerImage?: ContainerImage;
  /** Iterator age of the source stream above which the alarm fires. @default 300000 */
  readonly iteratorAgeAlarmMs?: number;
}

/** The props with every default applied and every value checked: read by the parts of the construct. */
export interface SluiceJobSettings {
  readonly jobModule: string;
  readonly jobFlags: readonly string[];
  readonly jobId: string;
  readonly parallelism: number;
  readonly workers: number;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly stream: string | undefined;
  readonly exchange: boolean;
  readonly stateStorage: StateStorage;
  readonly checkpointIntervalMs: number;
  readonly network: WorkerNetwork;
  readonly vpc: IVpc | undefined;
  readonly workersMode: WorkersMode;
  readonly removalPolicy: RemovalPolicy;
  readonly alarmTopic: ITopic | undefined;
  readonly sinkTables: readonly string[];
  readonly workerImage: ContainerImage | undefined;
  readonly iteratorAgeAlarmMs: number;
}

const JOB_ID = /^[A-Za-z0-9._-]{1,64}$/;
const TABLE_NAME = /^[A-Za-z0-9._-]{3,255}$/;
const STREAM_ARN = /^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream\/[A-Za-z0-9._-]{1,128}$/;

function integer(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`SluiceJob: ${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

function oneOf<T extends string>(name: string, value: T, allowed: readonly T[]): T {
  if (!allowed.includes(value)) throw new ConfigError(`SluiceJob: ${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value;
}

function defaultJobId(jobModule: string): string {
  const file = jobModule.split('/').pop() ?? jobModule;
  return file.replace(/\.[cm]?[jt]s$/, '');
}

export function compileSluiceJobProps(props: SluiceJobProps): SluiceJobSettings {
  if (props.jobModule.trim() === '') throw new ConfigError('SluiceJob: jobModule is empty; give the job file, e.g. examples/kinesis-to-dynamodb.ts');
  const jobId = props.jobId ?? defaultJobId(props.jobModule);
  if (!JOB_ID.test(jobId)) {
    throw new ConfigError(`SluiceJob: jobId "${jobId}" may have only letters, digits, ".", "_" and "-" (1-64); set jobId`);
  }
  if (props.stream !== undefined && !STREAM_ARN.test(props.stream)) {
    throw new ConfigError(`SluiceJob: stream must be a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME), got "${props.stream}"`);
  }
  for (const table of props.sinkTables ?? []) {
    if (!TABLE_NAME.test(table)) throw new ConfigError(`SluiceJob: sinkTables has "${table}", not a DynamoDB table name`);
  }
  const workersMode = oneOf('workersMode', props.workersMode ?? 'fargate', ['fargate', 'external']);
  if (workersMode === 'external' && (props.vpc !== undefined || props.workerImage !== undefined)) {
    throw new ConfigError("SluiceJob: vpc and workerImage are for workersMode 'fargate'; 'external' creates no workers");
  }
  return {
    jobModule: props.jobModule,
    jobFlags: [...(props.jobFlags ?? [])],
    jobId,
    parallelism: integer('parallelism', props.parallelism ?? 4, 1, 500),
    workers: integer('workers', props.workers ?? 2, 0, 500),
    cpu: integer('cpu', props.cpu ?? 1024, 256, 16384),
    memoryMiB: integer('memoryMiB', props.memoryMiB ?? 2048, 512, 122880),
    stream: props.stream,
    exchange: props.exchange ?? false,
    stateStorage: oneOf('stateStorage', props.stateStorage ?? 'efs', ['efs', 'ephemeral']),
    checkpointIntervalMs: integer('checkpointIntervalMs', props.checkpointIntervalMs ?? 60_000, 1000, 86_400_000),
    network: oneOf('network', props.network ?? 'public-subnets', ['public-subnets', 'private-nat']),
    vpc: props.vpc,
    workersMode,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    alarmTopic: props.alarmTopic,
    sinkTables: [...(props.sinkTables ?? [])],
    workerImage: props.workerImage,
    iteratorAgeAlarmMs: integer('iteratorAgeAlarmMs', props.iteratorAgeAlarmMs ?? 300_000, 1000, 604_800_000),
  };
}
