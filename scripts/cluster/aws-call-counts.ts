// Tallies of the calls the counting proxies saw (scripts/cluster/counting-proxy.ts), with snapshots and differences
// so that dev:cluster can count a window of a run (workers started -> table converged) rather than set-up and stop.
import { classifyS3Request, dynamoDbCallUnits, type DynamoDbCallUnits, type S3Request } from './aws-request-classes.ts';

export interface AwsCallCounts {
  readonly dynamodb: {
    /** Calls by action, failed ones included. */
    readonly calls: Record<string, number>;
    /** Units by table. */
    readonly readUnits: Record<string, number>;
    readonly writeUnits: Record<string, number>;
    /** Calls whose units are estimated (failed conditional writes, cancelled transactions: no ConsumedCapacity). */
    estimatedCalls: number;
    /** Transactions, whose units are computed from the request (DynamoDB Local under-reports them). */
    computedCalls: number;
  };
  readonly s3: {
    classA: number;
    classB: number;
    free: number;
    /** Requests by operation. */
    readonly operations: Record<string, number>;
  };
  readonly kinesis: {
    /** Calls by action. */
    readonly calls: Record<string, number>;
    /** Records in PutRecords and PutRecord calls. */
    putRecords: number;
  };
}

export function emptyCounts(): AwsCallCounts {
  return {
    dynamodb: { calls: {}, readUnits: {}, writeUnits: {}, estimatedCalls: 0, computedCalls: 0 },
    s3: { classA: 0, classB: 0, free: 0, operations: {} },
    kinesis: { calls: {}, putRecords: 0 },
  };
}

function bump(record: Record<string, number>, key: string, by = 1): void {
  record[key] = (record[key] ?? 0) + by;
}

/** Adds one DynamoDB call; returns its units (for tests and logs). */
export function countDynamoDbCall(counts: AwsCallCounts, action: string, request: unknown, status: number, response: unknown): DynamoDbCallUnits {
  bump(counts.dynamodb.calls, action);
  const units = dynamoDbCallUnits(action, request, status, response);
  if (units.source === 'estimated') counts.dynamodb.estimatedCalls++;
  if (units.source === 'computed') counts.dynamodb.computedCalls++;
  for (const u of units.units) {
    if (u.readUnits > 0) bump(counts.dynamodb.readUnits, u.table, u.readUnits);
    if (u.writeUnits > 0) bump(counts.dynamodb.writeUnits, u.table, u.writeUnits);
  }
  return units;
}

export function countS3Request(counts: AwsCallCounts, method: string, url: string, headers: Readonly<Record<string, string | string[] | undefined>>): S3Request {
  const request = classifyS3Request(method, url, headers);
  bump(counts.s3.operations, request.operation);
  if (request.requestClass === 'A') counts.s3.classA++;
  else if (request.requestClass === 'B') counts.s3.classB++;
  else counts.s3.free++;
  return request;
}

export function countKinesisCall(counts: AwsCallCounts, action: string, request: unknown): void {
  bump(counts.kinesis.calls, action);
  if (action === 'PutRecords') counts.kinesis.putRecords += ((request as { Records?: unknown[] } | undefined)?.Records ?? []).length;
  if (action === 'PutRecord') counts.kinesis.putRecords += 1;
}

/** A deep copy, for a later `diffCounts`. */
export function snapshotCounts(counts: AwsCallCounts): AwsCallCounts {
  return JSON.parse(JSON.stringify(counts)) as AwsCallCounts;
}

function diffRecord(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** What was counted between two snapshots. */
export function diffCounts(after: AwsCallCounts, before: AwsCallCounts): AwsCallCounts {
  return {
    dynamodb: {
      calls: diffRecord(after.dynamodb.calls, before.dynamodb.calls),
      readUnits: diffRecord(after.dynamodb.readUnits, before.dynamodb.readUnits),
      writeUnits: diffRecord(after.dynamodb.writeUnits, before.dynamodb.writeUnits),
      estimatedCalls: after.dynamodb.estimatedCalls - before.dynamodb.estimatedCalls,
      computedCalls: after.dynamodb.computedCalls - before.dynamodb.computedCalls,
    },
    s3: {
      classA: after.s3.classA - before.s3.classA,
      classB: after.s3.classB - before.s3.classB,
      free: after.s3.free - before.s3.free,
      operations: diffRecord(after.s3.operations, before.s3.operations),
    },
    kinesis: {
      calls: diffRecord(after.kinesis.calls, before.kinesis.calls),
      putRecords: after.kinesis.putRecords - before.kinesis.putRecords,
    },
  };
}

export function sum(record: Readonly<Record<string, number>>, keys?: (key: string) => boolean): number {
  return Object.entries(record).reduce((total, [k, v]) => (keys === undefined || keys(k) ? total + v : total), 0);
}
