import { describe, expect, it } from 'vitest';
import { addDecimalStrings, canonicalDecimal } from '../../lib/connectors/aws/dynamodb/decimal.ts';
import { StagedWrites } from '../../lib/connectors/aws/dynamodb/staged-writes.ts';
import { NonFiniteNumberError } from '../../lib/core/index.ts';
import { toChunks, toTransactItem } from '../../lib/connectors/aws/dynamodb/transact-items.ts';
import { compileDynamoDbSinkOptions } from '../../lib/connectors/aws/dynamodb/dynamodb-sink-options.ts';
import { markerPut, requestToken } from '../../lib/connectors/aws/dynamodb/committable.ts';
import { classifyFailure } from '../../lib/connectors/aws/dynamodb/errors.ts';
import { DynamoDbSinkError } from '../../lib/connectors/aws/dynamodb/errors.ts';
import { ConfigError } from '../../lib/core/index.ts';

const schema = { partitionKey: 'pk' };
const LIMITS = { maxItems: 99, maxBytes: 4_000_000 };

function staged(writes: Parameters<StagedWrites['add']>[0][], allowAdd = true): StagedWrites {
  const s = new StagedWrites(schema, allowAdd);
  for (const w of writes) s.add(w);
  return s;
}

describe('exact decimal sums', () => {
  it('adds like DynamoDB, not like binary floating point', () => {
    expect(addDecimalStrings('0.1', '0.2')).toBe('0.3');
    expect(addDecimalStrings('1', '-1')).toBe('0');
    expect(addDecimalStrings('1e3', '2.50')).toBe('1002.5');
    expect(addDecimalStrings('-0.001', '0.0001')).toBe('-0.0009');
    expect(addDecimalStrings('99999999999999999999999999999999999999', '1')).toBe('100000000000000000000000000000000000000');
    expect(addDecimalStrings('123456789012345678901234567890', '123456789012345678901234567890')).toBe('246913578024691357802469135780');
  });

  it('refuses sums beyond 38 significant digits and non-numbers', () => {
    expect(addDecimalStrings('1e37', '0.5')).toBeUndefined();
    expect(addDecimalStrings('abc', '1')).toBeUndefined();
    expect(canonicalDecimal('1.50')).toBe('1.5');
    expect(canonicalDecimal('0150e-2')).toBe('1.5');
  });
});

describe('StagedWrites folding', () => {
  it('folds two ADDs into one exact ADD and keeps SETs last-wins', () => {
    const s = staged([
      { type: 'update', key: { pk: 'a' }, add: { n: 0.1 }, set: { s: 'x' } },
      { type: 'update', key: { pk: 'a' }, add: { n: 0.2 }, set: { s: 'y' } },
    ]);
    expect(s.size).toBe(1);
    const [item] = s.drain();
    expect(item?.writes).toHaveLength(1);
    expect(toTransactItem('t', item!.key, item!.writes[0]!)).toEqual({
      Update: {
        TableName: 't',
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET #a0 = :v0 ADD #a1 :v1',
        ExpressionAttributeNames: { '#a0': 's', '#a1': 'n' },
        ExpressionAttributeValues: { ':v0': { S: 'y' }, ':v1': { N: '0.3' } },
      },
    });
  });

  it('applies an update to a put of the same checkpoint, and a delete wins over both', () => {
    const s = staged([
      { type: 'put', item: { pk: 'a', n: 1, tags: new Set(['x']), gone: true } },
      { type: 'update', key: { pk: 'a' }, add: { n: 2, tags: new Set(['y']) }, remove: ['gone'], set: { s: 'v' } },
      { type: 'put', item: { pk: 'b', n: 1 } },
      { type: 'delete', key: { pk: 'b' } },
    ]);
    const items = s.drain();
    expect(items.map((i) => i.writes)).toEqual([
      [{ kind: 'put', item: { pk: { S: 'a' }, n: { N: '3' }, tags: { SS: ['x', 'y'] }, s: { S: 'v' } } }],
      [{ kind: 'delete' }],
    ]);
  });

  it('turns a delete followed by an update into a put of what the update creates', () => {
    const [item] = staged([
      { type: 'delete', key: { pk: 'a' } },
      { type: 'update', key: { pk: 'a' }, add: { n: 5 }, set: { s: 'v' }, remove: ['x'] },
    ]).drain();
    expect(item?.writes).toEqual([{ kind: 'put', item: { pk: { S: 'a' }, n: { N: '5' }, s: { S: 'v' } } }]);
  });

  it('keeps writes it cannot fold separate and in order, one generation each', () => {
    const s = staged([
      { type: 'update', key: { pk: 'a' }, set: { n: 'text' } },
      { type: 'update', key: { pk: 'a' }, add: { n: 1 } },
      { type: 'update', key: { pk: 'b' }, add: { n: 10n ** 37n } },
      { type: 'update', key: { pk: 'b' }, add: { n: 0.5 } },
      { type: 'update', key: { pk: 'c' }, add: { n: 1 } },
    ]);
    expect(s.size).toBe(5);
    const chunks = toChunks('t', s.drain(), LIMITS);
    expect(chunks.map((c) => [c.generation, c.items.length])).toEqual([
      [0, 3],
      [1, 2],
    ]);
    expect(chunks[1]?.items.map((i) => i.Update?.ExpressionAttributeValues)).toEqual([{ ':v0': { N: '1' } }, { ':v0': { N: '0.5' } }]);
  });

  it('a remove then an add becomes a set', () => {
    const [item] = staged([
      { type: 'update', key: { pk: 'a' }, remove: ['n'] },
      { type: 'update', key: { pk: 'a' }, add: { n: 4 } },
    ]).drain();
    expect(item?.writes).toEqual([{ kind: 'update', actions: new Map([['n', { op: 'set', value: { N: '4' } }]]) }]);
  });

  it('rejects invalid writes with non-retriable errors', () => {
    const s = new StagedWrites({ partitionKey: 'pk', sortKey: 'sk' }, false);
    const error = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const missingKey = error(() => s.add({ type: 'put', item: { pk: 'a' } }));
    expect(missingKey).toBeInstanceOf(DynamoDbSinkError);
    expect((missingKey as DynamoDbSinkError).retriable).toBe(false);
    expect(String((missingKey as Error).message)).toMatch(/key attribute "sk"/);
    expect(error(() => s.add({ type: 'update', key: { pk: 'a', sk: 1 }, set: { pk: 'b' } }))).toBeInstanceOf(DynamoDbSinkError);
    expect(String(error(() => s.add({ type: 'update', key: { pk: 'a', sk: 1 }, add: { n: 1 } })))).toMatch(/not allowed in 'upsert' mode/);
    expect(String(error(() => s.add({ type: 'delete', key: { pk: 'a', sk: 1, other: 2 } })))).toMatch(/not key attributes/);
    expect(String(error(() => s.add({ type: 'put', item: { pk: 'a', sk: 1, d: new Date() } })))).toMatch(/cannot be converted/);
    expect(String(error(() => s.add({ type: 'nope' } as never)))).toMatch(/unknown write type/);
    expect(s.size).toBe(0);
  });

  it('refuses NaN and Infinity with an error naming the sink and the field, not a bare marshaller message', () => {
    const s = new StagedWrites({ partitionKey: 'pk' }, true, 'totals table');
    const thrown = (fn: () => void): unknown => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const inPut = thrown(() => s.add({ type: 'put', item: { pk: 'a', totals: { cents: [1, Number.POSITIVE_INFINITY] } } }));
    expect(inPut).toBeInstanceOf(NonFiniteNumberError);
    expect((inPut as Error).message).toBe(
      'sink "totals table": field put.item.totals.cents[1] is Infinity, which it cannot write as a number; DynamoDB numbers must be finite: check the computation that produced it',
    );
    const inAdd = thrown(() => s.add({ type: 'update', key: { pk: 'a' }, add: { n: Number.NaN } }));
    expect((inAdd as NonFiniteNumberError).path).toBe('add.n');
    expect(s.size).toBe(0);
  });
});

describe('chunks', () => {
  it('cuts at the item limit and the byte limit', () => {
    const s = staged(Array.from({ length: 250 }, (_, i) => ({ type: 'put' as const, item: { pk: `k${i}`, v: 'x'.repeat(100) } })));
    expect(toChunks('t', s.drain(), LIMITS).map((c) => c.items.length)).toEqual([99, 99, 52]);
    const big = staged(Array.from({ length: 10 }, (_, i) => ({ type: 'put' as const, item: { pk: `k${i}`, v: 'x'.repeat(1000) } })));
    expect(toChunks('t', big.drain(), { maxItems: 99, maxBytes: 3500 }).map((c) => c.items.length)).toEqual([3, 3, 3, 1]);
  });

  it('commit markers and request tokens are deterministic per transaction and chunk', () => {
    const config = compileDynamoDbSinkOptions({ table: 'orders', partitionKey: 'pk', toWrites: () => null });
    const committable = { txn: 'orders/a1/0/c7', preparedAt: 1_700_000_000_000, chunks: [] };
    expect(markerPut({ ...config.marker, sortKey: undefined }, committable, 2)).toEqual({
      Put: {
        TableName: 'orders',
        Item: {
          pk: { S: '#sluice-commit#orders/a1/0/c7#2' },
          sluiceTxn: { S: 'orders/a1/0/c7' },
          sluiceChunk: { N: '2' },
          sluicePreparedAt: { N: '1700000000000' },
          sluiceMarkerExpiresAt: { N: String(1_700_000_000 + 30 * 24 * 3600) },
        },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      },
    });
    expect(requestToken('orders/a1/0/c7', 2)).toHaveLength(36);
    expect(requestToken('orders/a1/0/c7', 2)).toBe(requestToken('orders/a1/0/c7', 2));
    expect(requestToken('orders/a1/0/c7', 3)).not.toBe(requestToken('orders/a1/0/c7', 2));
  });
});

describe('failure classification and options', () => {
  it('tells already-committed, retriable and fatal failures apart', () => {
    const canceled = (codes: string[]) => Object.assign(new Error('canceled'), { name: 'TransactionCanceledException', CancellationReasons: codes.map((Code) => ({ Code })) });
    expect(classifyFailure(canceled(['None', 'ConditionalCheckFailed']), 1)).toBe('already-committed');
    expect(classifyFailure(canceled(['TransactionConflict', 'None']), 1)).toBe('retry');
    expect(classifyFailure(canceled(['ValidationError', 'None']), 1)).toBe('fatal');
    expect(classifyFailure(Object.assign(new Error('x'), { name: 'ProvisionedThroughputExceededException' }))).toBe('retry');
    expect(classifyFailure(Object.assign(new Error('x'), { name: 'IdempotentParameterMismatchException' }))).toBe('token-mismatch');
    expect(classifyFailure(Object.assign(new Error('x'), { name: 'Whatever', $metadata: { httpStatusCode: 503 } }))).toBe('retry');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('retry');
    expect(classifyFailure(Object.assign(new Error('x'), { name: 'ValidationException', $metadata: { httpStatusCode: 400 } }))).toBe('fatal');
  });

  it('checks options', () => {
    const base = { table: 'orders', partitionKey: 'pk', toWrites: () => null };
    expect(() => compileDynamoDbSinkOptions({ ...base, table: 'x' })).toThrow(ConfigError);
    expect(() => compileDynamoDbSinkOptions({ ...base, maxItemsPerTransaction: 101 })).toThrow(/maxItemsPerTransaction/);
    expect(() => compileDynamoDbSinkOptions({ ...base, jobId: 'a/b' })).toThrow(/jobId/);
    expect(() => compileDynamoDbSinkOptions({ ...base, mode: 'other' as never })).toThrow(/mode/);
    const separate = compileDynamoDbSinkOptions({ ...base, sortKey: 'sk', marker: { table: 'markers', ttlSeconds: 0 } });
    expect(separate.marker).toEqual({ table: 'markers', partitionKey: 'pk', sortKey: undefined, keyPrefix: '#sluice-commit#', ttl: undefined });
    const same = compileDynamoDbSinkOptions({ ...base, sortKey: 'sk' });
    expect(same.marker.sortKey).toEqual({ name: 'sk', value: undefined });
    expect(compileDynamoDbSinkOptions({ ...base, sortKey: 'sk', marker: { sortKeyValue: 5 } }).marker.sortKey).toEqual({ name: 'sk', value: { N: '5' } });
    expect(() => compileDynamoDbSinkOptions({ ...base, sortKey: 'sk', marker: { sortKeyValue: '' } })).toThrow(/sortKeyValue/);
    // Unfenced (no jobId): the marker takes one item; with a jobId the fence check takes another.
    expect(same.fenced).toBe(false);
    expect(same.jobId).toBe('orders');
    expect(same.limits).toEqual({ maxItems: 99, maxBytes: 4_000_000 - 1024 });
    const named = compileDynamoDbSinkOptions({ ...base, jobId: 'orders-job' });
    expect(named).toMatchObject({ fenced: true, jobId: 'orders-job', limits: { maxItems: 98 } });
    expect(compileDynamoDbSinkOptions({ ...base, jobId: 'j', maxItemsPerTransaction: 2 }).limits.maxItems).toBe(1);
    expect(compileDynamoDbSinkOptions({ ...base, maxItemsPerTransaction: 2 }).limits.maxItems).toBe(1);
  });
});
