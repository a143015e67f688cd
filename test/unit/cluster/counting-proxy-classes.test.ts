// The counting proxy's pricing rules (scripts/cluster/aws-request-classes.ts, aws-call-counts.ts, cost-figures.ts):
// S3 request classes, DynamoDB capacity units from answers and requests, window differences and the cost split.
import { describe, expect, it } from 'vitest';
import { countDynamoDbCall, countKinesisCall, countS3Request, diffCounts, emptyCounts, snapshotCounts } from '../../../scripts/cluster/aws-call-counts.ts';
import { classifyS3Request, dynamoDbCallUnits, transactionUnits, wireItemSize, withConsumedCapacity } from '../../../scripts/cluster/aws-request-classes.ts';
import { costFigures } from '../../../scripts/cluster/cost-figures.ts';

describe('S3 request classes', () => {
  const cases: Array<[string, string, Record<string, string>, string, string]> = [
    ['PUT', '/bucket/totals/chk-3/task-0-1-e2.state?x-id=PutObject', {}, 'PutObject', 'A'],
    ['PUT', '/bucket/a/b', { 'x-amz-copy-source': '/bucket/a/c' }, 'CopyObject', 'A'],
    ['PUT', '/bucket/a/b?partNumber=2&uploadId=u', {}, 'UploadPart', 'A'],
    ['POST', '/bucket/a/b?uploads', {}, 'CreateMultipartUpload', 'A'],
    ['POST', '/bucket/a/b?uploadId=u', {}, 'CompleteMultipartUpload', 'A'],
    ['GET', '/bucket?list-type=2&prefix=totals%2F', {}, 'ListObjectsV2', 'A'],
    ['GET', '/bucket/?prefix=x', {}, 'ListObjects', 'A'],
    ['GET', '/', {}, 'ListBuckets', 'A'],
    ['GET', '/bucket/totals/chk-3/_metadata?x-id=GetObject', {}, 'GetObject', 'B'],
    ['HEAD', '/bucket/totals/x', {}, 'HeadObject', 'B'],
    ['HEAD', '/bucket', {}, 'HeadBucket', 'B'],
    ['GET', '/bucket?location', {}, 'GetBucket:location', 'B'],
    ['DELETE', '/bucket/a/b', {}, 'DeleteObject', 'free'],
    ['POST', '/bucket?delete', {}, 'DeleteObjects', 'free'],
  ];
  it.each(cases)('%s %s is %s (class %s)', (method, url, headers, operation, requestClass) => {
    expect(classifyS3Request(method, url, headers)).toEqual({ operation, requestClass });
  });

  it('counts classes and operations', () => {
    const counts = emptyCounts();
    countS3Request(counts, 'PUT', '/b/k', {});
    countS3Request(counts, 'GET', '/b/k', {});
    countS3Request(counts, 'GET', '/b?list-type=2', {});
    countS3Request(counts, 'DELETE', '/b/k', {});
    expect(counts.s3).toEqual({ classA: 2, classB: 1, free: 1, operations: { PutObject: 1, GetObject: 1, ListObjectsV2: 1, DeleteObject: 1 } });
  });
});

describe('DynamoDB capacity units', () => {
  it('takes a single-item call\'s units from ConsumedCapacity, as reads or writes by the action', () => {
    expect(dynamoDbCallUnits('GetItem', {}, 200, { ConsumedCapacity: { TableName: 'c', CapacityUnits: 0.5 } })).toEqual({ units: [{ table: 'c', readUnits: 0.5, writeUnits: 0 }], source: 'measured' });
    expect(dynamoDbCallUnits('UpdateItem', {}, 200, { ConsumedCapacity: { TableName: 'c', CapacityUnits: 3 } })).toEqual({ units: [{ table: 'c', readUnits: 0, writeUnits: 3 }], source: 'measured' });
    expect(dynamoDbCallUnits('BatchWriteItem', {}, 200, { ConsumedCapacity: [{ TableName: 'a', CapacityUnits: 10 }, { TableName: 'b', CapacityUnits: 2 }] }).units).toEqual([
      { table: 'a', readUnits: 0, writeUnits: 10 },
      { table: 'b', readUnits: 0, writeUnits: 2 },
    ]);
  });

  it('control-plane calls have no units', () => {
    expect(dynamoDbCallUnits('DescribeTable', {}, 200, {})).toEqual({ units: [], source: 'none' });
    expect(withConsumedCapacity('CreateTable', { TableName: 't' })).toBeUndefined();
  });

  it('asks for TOTAL unless the caller asked for it or for INDEXES', () => {
    expect(withConsumedCapacity('PutItem', { TableName: 't' })).toEqual({ TableName: 't', ReturnConsumedCapacity: 'TOTAL' });
    expect(withConsumedCapacity('Query', { TableName: 't', ReturnConsumedCapacity: 'NONE' })).toEqual({ TableName: 't', ReturnConsumedCapacity: 'TOTAL' });
    expect(withConsumedCapacity('Query', { TableName: 't', ReturnConsumedCapacity: 'INDEXES' })).toBeUndefined();
  });

  it('computes a transaction from its request: 2 units per item and started KB, per table', () => {
    const big = 'x'.repeat(1500);
    const request = {
      TransactItems: [
        { Put: { TableName: 'sink', Item: { account: { S: 'a-1' }, count: { N: '12' } } } },
        { Put: { TableName: 'sink', Item: { account: { S: 'a-2' }, blob: { S: big } } } },
        { Update: { TableName: 'ctl', Key: { pk: { S: 'lease#1' } }, ExpressionAttributeValues: { ':e': { N: '7' } } } },
        { ConditionCheck: { TableName: 'ctl', Key: { pk: { S: 'lease#1' } } } },
      ],
    };
    expect(transactionUnits('TransactWriteItems', request)).toEqual([
      { table: 'sink', readUnits: 0, writeUnits: 2 + 4 },
      { table: 'ctl', readUnits: 0, writeUnits: 2 + 2 },
    ]);
    // DynamoDB Local answers one item's worth per table; the computed count wins where larger.
    const answer = { ConsumedCapacity: [{ TableName: 'sink', CapacityUnits: 2 }, { TableName: 'ctl', CapacityUnits: 2 }] };
    expect(dynamoDbCallUnits('TransactWriteItems', request, 200, answer)).toEqual({
      units: [
        { table: 'sink', readUnits: 0, writeUnits: 6 },
        { table: 'ctl', readUnits: 0, writeUnits: 4 },
      ],
      source: 'computed',
    });
  });

  it('sizes items by DynamoDB\'s rules', () => {
    expect(wireItemSize({ ab: { S: 'héllo' } })).toBe(2 + 6);
    expect(wireItemSize({ n: { N: '12345' } })).toBe(1 + 4);
    expect(wireItemSize({ b: { B: Buffer.from('abcd').toString('base64') } })).toBe(1 + 4);
    expect(wireItemSize({ m: { M: { x: { BOOL: true } } } })).toBe(1 + 3 + 1 + 1);
  });

  it('bills a failed conditional write its minimum: 1 per item, 2 in a transaction', () => {
    expect(dynamoDbCallUnits('PutItem', { TableName: 'c' }, 400, { __type: 'ConditionalCheckFailedException' })).toEqual({ units: [{ table: 'c', readUnits: 0, writeUnits: 1 }], source: 'estimated' });
    const cancelled = dynamoDbCallUnits('TransactWriteItems', { TransactItems: [{ Put: { TableName: 'c' } }, { ConditionCheck: { TableName: 'l' } }] }, 400, {});
    expect(cancelled).toEqual({
      units: [
        { table: 'c', readUnits: 0, writeUnits: 2 },
        { table: 'l', readUnits: 0, writeUnits: 2 },
      ],
      source: 'estimated',
    });
  });
});

describe('window counts and the cost split', () => {
  it('a difference of snapshots holds only what came between', () => {
    const counts = emptyCounts();
    countDynamoDbCall(counts, 'GetItem', {}, 200, { ConsumedCapacity: { TableName: 'c', CapacityUnits: 1 } });
    countKinesisCall(counts, 'GetRecords', {});
    const before = snapshotCounts(counts);
    countDynamoDbCall(counts, 'GetItem', {}, 200, { ConsumedCapacity: { TableName: 'c', CapacityUnits: 1 } });
    countDynamoDbCall(counts, 'PutItem', { TableName: 'c' }, 400, {});
    countKinesisCall(counts, 'PutRecords', { Records: [{}, {}, {}] });
    countS3Request(counts, 'PUT', '/b/k', {});
    const d = diffCounts(counts, before);
    expect(d.dynamodb).toEqual({ calls: { GetItem: 1, PutItem: 1 }, readUnits: { c: 1 }, writeUnits: { c: 1 }, estimatedCalls: 1, computedCalls: 0 });
    expect(d.kinesis).toEqual({ calls: { PutRecords: 1 }, putRecords: 3 });
    expect(d.s3.classA).toBe(1);
  });

  it('splits the totals: coordination per checkpoint, the data path per million events', () => {
    const calls = emptyCounts();
    Object.assign(calls.dynamodb.readUnits, { control: 40 });
    Object.assign(calls.dynamodb.writeUnits, { control: 20, sink: 300, 'sink-markers': 100 });
    calls.s3.classA = 12;
    calls.s3.classB = 8;
    Object.assign(calls.kinesis.calls, { GetRecords: 50, PutRecords: 5 });
    const f = costFigures({
      checkpoints: 4,
      events: 2_000_000,
      ms: 10_000,
      calls,
      stepFunctions: { supervisorTransitions: 4, cyclesTransitions: 36, handlerCalls: { A: 6, B: 6 }, handlerMs: { A: 100, B: 20 } },
      stateDirBytesWritten: 1_000_000,
      sinkTables: ['sink', 'sink-markers'],
    });
    expect(f.perCheckpoint).toMatchObject({ stateTransitions: 10, handlerCalls: 3, handlerMs: 30, dynamodbReadUnits: 10, dynamodbWriteUnits: 5, s3ClassA: 3, s3ClassB: 2, kinesisGetRecords: 0, kinesisPutRecords: 0, stateDirBytesWritten: 0 });
    expect(f.perMillionEvents).toMatchObject({ stateTransitions: 0, handlerCalls: 0, dynamodbReadUnits: 0, dynamodbWriteUnits: 200, kinesisGetRecords: 25, kinesisPutRecords: 2.5, stateDirBytesWritten: 500_000, s3ClassA: 0 });
    expect(f.window.totals).toMatchObject({ dynamodbWriteUnits: 420, stateTransitions: 40 });
    const keys = ['stateTransitions', 'handlerCalls', 'handlerMs', 'dynamodbReadUnits', 'dynamodbWriteUnits', 's3ClassA', 's3ClassB', 'kinesisGetRecords', 'kinesisPutRecords', 'stateDirBytesWritten', 'method'];
    expect(Object.keys(f.perCheckpoint).sort()).toEqual([...keys].sort());
    expect(Object.keys(f.perMillionEvents).sort()).toEqual([...keys].sort());
  });
});
