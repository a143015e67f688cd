/**
 * Monthly cost of one Sluice cluster job on AWS, and of the same job on Amazon Managed Service for Apache Flink, from
 * dev:cluster quantities (per checkpoint, per million events), the workload, the deployment and the prices. Pure
 * arithmetic, no I/O: docs/aws-cost.md explains every line, test/unit/cost/cost-model.test.ts checks it.
 */
import type { AwsPrices } from './aws-prices.ts';
import type { DevClusterFigures, FigureKey } from './dev-cluster-figures.ts';

export const HOURS_PER_MONTH = 730;
export const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;
const GB = 1024 ** 3;
/** Kinesis bills a provisioned PUT in 25 KB payload units per record. */
const PUT_PAYLOAD_UNIT_BYTES = 25 * 1024;

/** What the job processes (issue 14 item 7). */
export interface Workload {
  /** @default 10000 */
  readonly eventsPerSecond: number;
  /** @default 200 */
  readonly eventBytes: number;
  /** Shards of the input stream (provisioned). @default 8 */
  readonly inputShards: number;
  /** @default 10000 */
  readonly keys: number;
  /** Tumbling window: every key emits one result per window. @default 60 */
  readonly windowSeconds: number;
  /** Keyed state of the whole job. @default 1 */
  readonly stateGb: number;
  /** Size of one result item in the DynamoDB table (1 write unit per KB). @default 200 */
  readonly resultItemBytes: number;
}

export const DEFAULT_WORKLOAD: Workload = {
  eventsPerSecond: 10_000,
  eventBytes: 200,
  inputShards: 8,
  keys: 10_000,
  windowSeconds: 60,
  stateGb: 1,
  resultItemBytes: 200,
};

/** How the job is deployed, and the assumptions that no dev:cluster run measures. */
export interface Deployment {
  /** Slots (P): the exchange stream has P shards. @default 8 (one slot per input shard) */
  readonly parallelism: number;
  /** Fargate tasks. @default 2 */
  readonly workers: number;
  /** @default 1 */
  readonly workerVcpu: number;
  /** @default 4 */
  readonly workerMemoryGb: number;
  /** Memory of the coordinator's Lambda functions. @default 0.25 */
  readonly lambdaMemoryGb: number;
  /** Lease rounds run every third of it: one UpdateItem per held slot, a heartbeat and two Queries. @default 10000 */
  readonly leaseDurationMs: number;
  /** Each worker reads `control` (consistent) this often. @default 500 */
  readonly controlPollMs: number;
  /** One Express cycles execution runs this long (SLUICE_CYCLE_SECONDS). @default 240 */
  readonly cycleSeconds: number;
  /** Standard supervisor transitions per cycles execution (RunCycles, Count, AfterCycles). @default 3 */
  readonly supervisorTransitionsPerCycle: number;
  /** Billed memory of an Express cycles execution (64 MB chunks; its payloads are ids only). @default 0.0625 */
  readonly expressMemoryGb: number;
  /** Custom metrics the dashboard and alarms read. @default 44 (12 job-level, 4 per slot at P = 8) */
  readonly customMetrics: number;
  /** @default 5 (no checkpoint in 3 intervals, 3 aborts, iterator age, failed executions, restart loop) */
  readonly alarms: number;
  /** @default 1 */
  readonly dashboards: number;
  /** Worker event lines, handler logs and state machine logging (level ALL) per checkpoint. @default 20000 */
  readonly logBytesPerCheckpoint: number;
  /** Logs that do not depend on checkpoints (start-up, warnings, Container Insights). @default 1 */
  readonly baseLogGbMonth: number;
  /** RocksDB reads from the state dir per byte written (compaction reads what it rewrites). @default 0.5 */
  readonly efsReadPerByteWritten: number;
  /** Copies of the state on EFS (the current epoch, and a previous one until it is reused or removed). @default 2 */
  readonly efsStateCopies: number;
  /** Copies of the state in S3 (retained checkpoints and the shared files they reference). @default 2 */
  readonly s3StateCopies: number;
  /** Bytes an event takes in exchange frames (msgpack record plus its share of the frame header). @default 230 */
  readonly exchangeBytesPerEvent: number;
  /** Managed Flink KPUs for the same job (parallelism 8 at 4 per KPU), plus one orchestration KPU. @default 2 */
  readonly flinkKpus: number;
  /** Managed Flink durable application backups (snapshots) kept. @default 1 */
  readonly flinkSnapshotsKept: number;
}

export const DEFAULT_DEPLOYMENT: Deployment = {
  parallelism: 8,
  workers: 2,
  workerVcpu: 1,
  workerMemoryGb: 4,
  lambdaMemoryGb: 0.25,
  leaseDurationMs: 10_000,
  controlPollMs: 500,
  cycleSeconds: 240,
  supervisorTransitionsPerCycle: 3,
  expressMemoryGb: 0.0625,
  customMetrics: 44,
  alarms: 5,
  dashboards: 1,
  logBytesPerCheckpoint: 20_000,
  baseLogGbMonth: 1,
  efsReadPerByteWritten: 0.5,
  efsStateCopies: 2,
  s3StateCopies: 2,
  exchangeBytesPerEvent: 230,
  flinkKpus: 2,
  flinkSnapshotsKept: 1,
};

export type DataPath = 'aligned' | 'exchange';
export type StateStorage = 'efs' | 'ephemeral';

export interface Scenario {
  readonly checkpointIntervalS: number;
  readonly path: DataPath;
  readonly stateStorage: StateStorage;
}

/** The eight rows of the cost table: 60 s and 10 s checkpoints, aligned and exchange, EFS and ephemeral state. */
export const SCENARIOS: readonly Scenario[] = [60, 10].flatMap((checkpointIntervalS) =>
  (['aligned', 'exchange'] as const).flatMap((path) =>
    (['efs', 'ephemeral'] as const).map((stateStorage) => ({ checkpointIntervalS, path, stateStorage })),
  ),
);

/** US dollars per month, by service. */
export interface SluiceCost {
  readonly fargate: number;
  readonly stepFunctions: number;
  readonly lambda: number;
  readonly dynamodb: number;
  readonly s3: number;
  readonly exchangeStream: number;
  readonly efs: number;
  readonly cloudwatch: number;
  readonly total: number;
}

/** The billed quantities behind a SluiceCost, per month. */
export interface SluiceUsage {
  readonly checkpoints: number;
  readonly millionEvents: number;
  readonly cyclesExecutions: number;
  readonly standardTransitions: number;
  readonly handlerCalls: number;
  readonly handlerGbSeconds: number;
  readonly dynamodbWriteUnits: number;
  readonly dynamodbReadUnits: number;
  readonly s3ClassA: number;
  readonly s3ClassB: number;
  readonly exchangePutPayloadUnits: number;
  readonly stateDirGbWritten: number;
  readonly logGb: number;
}

function monthly(figures: DevClusterFigures, key: FigureKey, checkpoints: number, millionEvents: number): number {
  return figures.perCheckpoint[key] * checkpoints + figures.perMillionEvents[key] * millionEvents;
}

/** Lease rounds and control polls: they run on the clock, not per checkpoint or event. Units per month. */
export function backgroundDynamodbUnits(d: Deployment): { writeUnits: number; readUnits: number } {
  const roundsPerSecond = 3000 / d.leaseDurationMs;
  const slotsPerWorker = Math.ceil(d.parallelism / d.workers);
  // Lease and heartbeat items are ~100 bytes (1 write unit each); a Query of the leases reads < 4 KB up to ~40 slots.
  const writesPerSecond = d.workers * roundsPerSecond * (slotsPerWorker + 1);
  const readsPerSecond = d.workers * roundsPerSecond * 2 + d.workers * (1000 / d.controlPollMs);
  return { writeUnits: writesPerSecond * SECONDS_PER_MONTH, readUnits: readsPerSecond * SECONDS_PER_MONTH };
}

export function sluiceUsage(figures: DevClusterFigures, w: Workload, d: Deployment, s: Scenario): SluiceUsage {
  const checkpoints = SECONDS_PER_MONTH / s.checkpointIntervalS;
  const millionEvents = (w.eventsPerSecond * SECONDS_PER_MONTH) / 1e6;
  const q = (key: FigureKey): number => monthly(figures, key, checkpoints, millionEvents);
  const cyclesExecutions = SECONDS_PER_MONTH / d.cycleSeconds;
  const background = backgroundDynamodbUnits(d);
  // Every record put is rounded up to whole 25 KB units: bytes / 25 KB + one unit per record bounds it from above.
  const exchangedBytes = s.path === 'exchange' ? w.eventsPerSecond * SECONDS_PER_MONTH * d.exchangeBytesPerEvent : 0;
  const exchangePutPayloadUnits = s.path === 'exchange' ? exchangedBytes / PUT_PAYLOAD_UNIT_BYTES + q('kinesisPutRecords') : 0;
  return {
    checkpoints,
    millionEvents,
    cyclesExecutions,
    standardTransitions: cyclesExecutions * d.supervisorTransitionsPerCycle,
    handlerCalls: q('handlerCalls'),
    handlerGbSeconds: (q('handlerMs') / 1000) * d.lambdaMemoryGb,
    dynamodbWriteUnits: q('dynamodbWriteUnits') + background.writeUnits,
    dynamodbReadUnits: q('dynamodbReadUnits') + background.readUnits,
    s3ClassA: q('s3ClassA'),
    s3ClassB: q('s3ClassB'),
    exchangePutPayloadUnits,
    stateDirGbWritten: s.stateStorage === 'efs' ? q('stateDirBytesWritten') / GB : 0,
    logGb: d.baseLogGbMonth + (checkpoints * d.logBytesPerCheckpoint) / GB,
  };
}

export function sluiceCost(figures: DevClusterFigures, w: Workload, d: Deployment, s: Scenario, p: AwsPrices): SluiceCost {
  const u = sluiceUsage(figures, w, d, s);
  const fargate =
    d.workers * (d.workerVcpu * p.fargateVcpuHour.usd + d.workerMemoryGb * p.fargateGbHour.usd) * HOURS_PER_MONTH;
  const stepFunctions =
    u.standardTransitions * p.stepFunctionsStandardTransition.usd +
    u.cyclesExecutions * p.stepFunctionsExpressRequest.usd +
    u.cyclesExecutions * d.cycleSeconds * d.expressMemoryGb * p.stepFunctionsExpressGbSecond.usd;
  const lambda = u.handlerCalls * p.lambdaRequest.usd + u.handlerGbSeconds * p.lambdaGbSecond.usd;
  const dynamodb = u.dynamodbWriteUnits * p.dynamodbWriteRequestUnit.usd + u.dynamodbReadUnits * p.dynamodbReadRequestUnit.usd;
  const s3 =
    u.s3ClassA * p.s3ClassARequest.usd +
    u.s3ClassB * p.s3ClassBRequest.usd +
    w.stateGb * d.s3StateCopies * p.s3StorageGbMonth.usd;
  const exchangeStream =
    s.path === 'exchange'
      ? d.parallelism * HOURS_PER_MONTH * p.kinesisShardHour.usd + u.exchangePutPayloadUnits * p.kinesisPutPayloadUnit.usd
      : 0;
  const efs =
    s.stateStorage === 'efs'
      ? u.stateDirGbWritten * p.efsElasticWriteGb.usd +
        u.stateDirGbWritten * d.efsReadPerByteWritten * p.efsElasticReadGb.usd +
        w.stateGb * d.efsStateCopies * p.efsStandardGbMonth.usd
      : 0;
  const cloudwatch =
    d.customMetrics * p.cloudwatchMetricMonth.usd +
    d.alarms * p.cloudwatchAlarmMonth.usd +
    d.dashboards * p.cloudwatchDashboardMonth.usd +
    u.logGb * p.cloudwatchLogsIngestedGb.usd;
  const total = fargate + stepFunctions + lambda + dynamodb + s3 + exchangeStream + efs + cloudwatch;
  return { fargate, stepFunctions, lambda, dynamodb, s3, exchangeStream, efs, cloudwatch, total };
}

/** Results the job writes per month: one item per key and window. */
export function resultItemsPerMonth(w: Workload): number {
  return (w.keys * SECONDS_PER_MONTH) / w.windowSeconds;
}

export interface FlinkCost {
  readonly kpus: number;
  readonly orchestration: number;
  readonly runningStorage: number;
  readonly backups: number;
  /** The same DynamoDB results, written as plain puts (1 unit per KB; Flink's DynamoDB sink is at-least-once). */
  readonly sinkWrites: number;
  readonly cloudwatch: number;
  readonly total: number;
}

/** Managed Flink bills KPUs, not checkpoints: the interval changes nothing here. */
export function flinkCost(w: Workload, d: Deployment, p: AwsPrices): FlinkCost {
  const kpus = d.flinkKpus * p.flinkKpuHour.usd * HOURS_PER_MONTH;
  const orchestration = p.flinkKpuHour.usd * HOURS_PER_MONTH;
  // The pricing page's examples bill the 50 GB per KPU as allocated; see docs/aws-cost.md for the other reading.
  const runningStorage = d.flinkKpus * 50 * p.flinkRunningStorageGbMonth.usd;
  const backups = w.stateGb * d.flinkSnapshotsKept * p.flinkBackupGbMonth.usd;
  const sinkWrites = resultItemsPerMonth(w) * Math.ceil(w.resultItemBytes / 1024) * p.dynamodbWriteRequestUnit.usd;
  // Managed Flink publishes its metrics without charge; the dashboard, alarms and base logs are the same as ours.
  const cloudwatch =
    d.alarms * p.cloudwatchAlarmMonth.usd + d.dashboards * p.cloudwatchDashboardMonth.usd + d.baseLogGbMonth * p.cloudwatchLogsIngestedGb.usd;
  const total = kpus + orchestration + runningStorage + backups + sinkWrites + cloudwatch;
  return { kpus, orchestration, runningStorage, backups, sinkWrites, cloudwatch, total };
}

/** The input stream, paid the same under either runtime: provisioned shards plus the producers' PUT payload units. */
export function inputStreamCost(w: Workload, p: AwsPrices): { provisioned: number; onDemand: number } {
  const records = w.eventsPerSecond * SECONDS_PER_MONTH;
  const provisioned =
    w.inputShards * HOURS_PER_MONTH * p.kinesisShardHour.usd +
    records * Math.ceil(w.eventBytes / PUT_PAYLOAD_UNIT_BYTES) * p.kinesisPutPayloadUnit.usd;
  // On-demand rounds each record up to 1 KB written; reads are billed on the bytes read (one consumer here).
  const gbIn = (records * Math.ceil(w.eventBytes / 1024) * 1024) / GB;
  const gbOut = (records * w.eventBytes) / GB;
  const onDemand =
    HOURS_PER_MONTH * p.kinesisOnDemandStreamHour.usd + gbIn * p.kinesisOnDemandGbIn.usd + gbOut * p.kinesisOnDemandGbOut.usd;
  return { provisioned, onDemand };
}
