// The per-checkpoint and per-million-event quantities of `npm run dev:cluster -- --json` that the cost model
// (docs/aws-cost.md) multiplies by prices. Its input is what was counted in one window of a run.
import type { LocalRunStats } from '../../functions/coordinator/local/local-step-functions.ts';
import { sum, type AwsCallCounts } from './aws-call-counts.ts';

/** The keys the cost model reads: keep them exactly. */
export interface CostQuantities {
  stateTransitions: number;
  handlerCalls: number;
  handlerMs: number;
  dynamodbReadUnits: number;
  dynamodbWriteUnits: number;
  s3ClassA: number;
  s3ClassB: number;
  kinesisGetRecords: number;
  kinesisPutRecords: number;
  stateDirBytesWritten: number;
}

export interface WindowCounts {
  /** Completed checkpoints in the window. */
  readonly checkpoints: number;
  /** Input records the job processed in the window. */
  readonly events: number;
  readonly ms: number;
  readonly calls: AwsCallCounts;
  /** The Step Functions runner's stats at the window's end minus those at its start. */
  readonly stepFunctions: Pick<LocalRunStats, 'supervisorTransitions' | 'cyclesTransitions' | 'handlerCalls' | 'handlerMs'>;
  readonly stateDirBytesWritten: number;
  /** DynamoDB tables the job's sinks write (their units scale with events, not checkpoints). */
  readonly sinkTables: readonly string[];
}

export interface CostFigures {
  readonly perCheckpoint: CostQuantities & { method: string };
  readonly perMillionEvents: CostQuantities & { method: string };
  /** Everything counted in the window (the sum of both parts), and its size. */
  readonly window: { readonly ms: number; readonly checkpoints: number; readonly events: number; readonly totals: CostQuantities };
  readonly method: string;
}

export const COST_METHOD =
  'Counted over one window of the run (all slots started -> sink table equal to the reference; set-up, `sluice aws ' +
  'init`, `sluice aws stop` and the feeding excluded) by counting HTTP proxies in front of kinesalite, s3rver and ' +
  'DynamoDB Local through which every worker process and the coordinator handlers talk. The two objects split the ' +
  'window\'s totals, they do not repeat them: perCheckpoint = the checkpoint and coordination path (Step Functions ' +
  'state transitions and handler calls/ms from the local runner, which bills like Standard, DynamoDB units of the ' +
  'control and commit tables (leases, heartbeats, control reads, acks, metadata commits; lease traffic is per worker ' +
  'and second, not per checkpoint: see "Costs and timings"), all S3 requests) divided by completed checkpoints; ' +
  'perMillionEvents = the data path (DynamoDB units of the sink and marker tables, Kinesis GetRecords and PutRecords ' +
  'calls, bytes written under the state dirs) divided by input records x 1e6; the other keys of each are 0. ' +
  'DynamoDB units are DynamoDB Local\'s ReturnConsumedCapacity (the proxy asks for TOTAL; on-demand rules: writes ' +
  '1/KB, consistent reads 1/4 KB, eventual half) except for transactions, which DynamoDB Local reports as one item ' +
  'per table: those are computed from the request, 2 units per item and started KB (of a Put\'s item; of an ' +
  'Update\'s key and values, a Delete\'s or ConditionCheck\'s key: lower bounds); failed conditional writes return ' +
  'no capacity and count 1 unit per item (2 in a transaction). S3 class A = PUT, COPY, POST, LIST; class B = GET, HEAD; DELETE free. State dir bytes = the ' +
  'largest size seen per file (by inode) in walks every 250 ms. Emulators on one loaded machine: call counts are ' +
  'the code\'s, latencies are not AWS\'s.';

const zero = (): CostQuantities => ({
  stateTransitions: 0,
  handlerCalls: 0,
  handlerMs: 0,
  dynamodbReadUnits: 0,
  dynamodbWriteUnits: 0,
  s3ClassA: 0,
  s3ClassB: 0,
  kinesisGetRecords: 0,
  kinesisPutRecords: 0,
  stateDirBytesWritten: 0,
});

function scaled(q: CostQuantities, divisor: number): CostQuantities {
  const out = zero();
  for (const key of Object.keys(out) as (keyof CostQuantities)[]) out[key] = divisor > 0 ? round(q[key] / divisor) : 0;
  return out;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

export function costFigures(w: WindowCounts): CostFigures {
  const sink = (table: string): boolean => w.sinkTables.includes(table);
  const { dynamodb, s3, kinesis } = w.calls;
  const checkpointPath: CostQuantities = {
    ...zero(),
    stateTransitions: w.stepFunctions.supervisorTransitions + w.stepFunctions.cyclesTransitions,
    handlerCalls: sum(w.stepFunctions.handlerCalls),
    handlerMs: sum(w.stepFunctions.handlerMs),
    dynamodbReadUnits: sum(dynamodb.readUnits, (t) => !sink(t)),
    dynamodbWriteUnits: sum(dynamodb.writeUnits, (t) => !sink(t)),
    s3ClassA: s3.classA,
    s3ClassB: s3.classB,
  };
  const dataPath: CostQuantities = {
    ...zero(),
    dynamodbReadUnits: sum(dynamodb.readUnits, sink),
    dynamodbWriteUnits: sum(dynamodb.writeUnits, sink),
    kinesisGetRecords: kinesis.calls['GetRecords'] ?? 0,
    kinesisPutRecords: (kinesis.calls['PutRecords'] ?? 0) + (kinesis.calls['PutRecord'] ?? 0),
    stateDirBytesWritten: w.stateDirBytesWritten,
  };
  const totals = zero();
  for (const key of Object.keys(totals) as (keyof CostQuantities)[]) totals[key] = round(checkpointPath[key] + dataPath[key]);
  return {
    perCheckpoint: { ...scaled(checkpointPath, w.checkpoints), method: 'checkpoint and coordination path / completed checkpoints (see method)' },
    perMillionEvents: { ...scaled(dataPath, w.events / 1e6), method: 'data path / (input records / 1e6) (see method)' },
    window: { ms: w.ms, checkpoints: w.checkpoints, events: w.events, totals },
    method: COST_METHOD,
  };
}
