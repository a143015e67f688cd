import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbCommitterFromDescriptor } from '../../lib/connectors/aws/dynamodb/external-commit.ts';
import {
  DynamoDBClient,
  GetItemCommand,
  ProvisionedThroughputExceededException,
  ScanCommand,
  TransactionCanceledException,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { batchOf, ConfigError, UserFunctionError } from '../../lib/core/index.ts';
import type { SinkContext } from '../../lib/connectors/sink.ts';
import { decodeTaskSnapshot, encodeTaskSnapshot } from '../../lib/storage/task-state-codec.ts';
import { dynamoDbSink, type DynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import type { DynamoDbSinkOptions } from '../../lib/connectors/aws/dynamodb/dynamodb-sink-options.ts';
import type { DynamoDbCommittable } from '../../lib/connectors/aws/dynamodb/committable.ts';
import type { DynamoDbCommitter } from '../../lib/connectors/aws/dynamodb/dynamodb-committer.ts';
import { DynamoDbSinkError } from '../../lib/connectors/aws/dynamodb/errors.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

interface Order {
  readonly customer: string;
  readonly amount: number;
}

let dynamo: DynamoDbLocal;
let tableCounter = 0;
let table: string;

/** What a test injects into the next calls of its client: a function per call that may throw or rewrite the call. */
type Interceptor = (command: string, input: Record<string, unknown>, send: () => Promise<unknown>) => Promise<unknown>;

function clientWith(intercept?: Interceptor): DynamoDBClient {
  const client = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler(), maxAttempts: 1 });
  if (intercept !== undefined) {
    client.middlewareStack.add(
      (next, context) => async (args) =>
        intercept(context.commandName ?? '', args.input as Record<string, unknown>, () => next(args)) as ReturnType<typeof next>,
      { step: 'initialize', name: 'interceptor' },
    );
  }
  return client;
}

/** A client whose transactions carry no ClientRequestToken: as if the token's 10 minutes were over. */
function tokenlessClient(): DynamoDBClient {
  return clientWith(async (command, input, send) => {
    if (command === 'TransactWriteItemsCommand') delete input['ClientRequestToken'];
    return send();
  });
}

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 6 };

function orderSink(options: Partial<DynamoDbSinkOptions<Order>> = {}) {
  return dynamoDbSink<Order>({
    table,
    partitionKey: 'pk',
    toWrites: (o) => ({ type: 'update', key: { pk: o.customer }, add: { total: o.amount, orders: 1 }, set: { last: o.amount } }),
    client: clientWith(),
    retry: FAST_RETRY,
    ...options,
  });
}

/** Attempt 'attempt-<n>' runs with epoch n. */
function ctx(subtask = 0, attempt = 'attempt-1', checkpointing = true): SinkContext {
  return { subtask, parallelism: 2, operatorName: 'orders-sink', fencing: { attempt: 0, epoch: Number(attempt.slice('attempt-'.length)) }, checkpointing };
}

async function stage<T>(sink: DynamoDbSink<T>, records: T[], checkpointId: number, context = ctx()): Promise<DynamoDbCommittable[]> {
  const writer = await sink.createWriter(context);
  await writer.write(batchOf(records, records.map((_, i) => i)));
  return writer.prepareCommit(checkpointId);
}

async function commit<T>(sink: DynamoDbSink<T>, committables: readonly DynamoDbCommittable[]): Promise<DynamoDbCommitter> {
  const committer = (await sink.createCommitter(ctx())) as DynamoDbCommitter;
  await committer.commit(committables);
  return committer;
}

/** The table's items by partition key, markers left out. */
async function items(name = table): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamo.client.send(new ScanCommand({ TableName: name, ExclusiveStartKey: start, ConsistentRead: true }));
    for (const item of page.Items ?? []) {
      const value = unmarshall(item);
      if (!String(value['pk']).startsWith('#sluice-commit#')) out[String(value['pk'])] = value;
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return out;
}

async function markers(name = table): Promise<number> {
  const page = await dynamo.client.send(new ScanCommand({ TableName: name, ConsistentRead: true }));
  // Commit markers end in `#<chunk>`; the job's fence item (`.../fence`) shares the prefix but is no marker.
  return (page.Items ?? []).filter((i) => /^#sluice-commit#.*#\d+$/.test(String(i['pk']?.S))).length;
}

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

beforeEach(async () => {
  table = `orders-${++tableCounter}`;
  await ensureTable({ tableName: table, partitionKey: { name: 'pk' }, client: dynamo.client });
});

const orders: Order[] = [
  { customer: 'ann', amount: 10 },
  { customer: 'bob', amount: 5 },
  { customer: 'ann', amount: 2.5 },
  { customer: 'cy', amount: 0.1 },
  { customer: 'cy', amount: 0.2 },
];

describe('dynamoDbSink, transactional', () => {
  it('writes nothing before the commit and everything exactly once after it', async () => {
    const sink = orderSink();
    const committables = await stage(sink, orders, 1);
    expect(committables).toHaveLength(1);
    // The attempt's tag, then a random nonce of the writer: names never repeat across jobs or runs.
    expect(committables[0]?.txn).toMatch(new RegExp(`^${table}/e1-a0-[0-9a-f]{12}/0/c1$`));
    expect(await items()).toEqual({});
    const committer = await commit(sink, committables);
    expect(committer.stats).toEqual({ committed: 1, alreadyCommitted: 0, retries: 0 });
    expect(await items()).toEqual({
      ann: { pk: 'ann', total: 12.5, orders: 2, last: 2.5 },
      bob: { pk: 'bob', total: 5, orders: 1, last: 5 },
      cy: { pk: 'cy', total: 0.3, orders: 2, last: 0.2 },
    });
    expect(await markers()).toBe(1);
  });

  it('re-committing a committable changes nothing: within the token window, after it (marker only), and from a restored checkpoint', async () => {
    const sink = orderSink();
    const committables = await stage(sink, orders, 1);
    await commit(sink, committables);
    const after = await items();

    // Same request again within 10 minutes: DynamoDB answers from the token, applying nothing.
    await commit(sink, committables);
    expect(await items()).toEqual(after);

    // Hours later the token is forgotten: a client that sends no token shows the marker alone refuses the chunk.
    const tokenless = orderSink({ client: tokenlessClient() });
    const late = await commit(tokenless, committables);
    expect(late.stats).toEqual({ committed: 0, alreadyCommitted: 1, retries: 0 });

    // A restarted job (new sink, new client) commits the committables it restored from the checkpoint file.
    const stored = encodeTaskSnapshot({ vertex: 3, subtask: 0, operators: [{ nodeId: 7, watermark: 0, operatorState: committables }] });
    const restored = decodeTaskSnapshot(stored).operators[0]?.operatorState as DynamoDbCommittable[];
    const again = await commit(orderSink({ client: tokenlessClient() }), restored);
    expect(again.stats.alreadyCommitted).toBe(1);
    expect(await items()).toEqual(after);
  });

  it('commits more than 100 writes in chunks of at most 99 plus the marker, each exactly once', async () => {
    const many = Array.from({ length: 250 }, (_, i) => ({ customer: `c${String(i).padStart(3, '0')}`, amount: i }));
    const sink = orderSink();
    const sizes: number[] = [];
    const countingClient = clientWith(async (command, input, send) => {
      if (command === 'TransactWriteItemsCommand') sizes.push((input['TransactItems'] as unknown[]).length);
      return send();
    });
    const counting = orderSink({ client: countingClient });
    const committables = await stage(sink, many, 4);
    expect(committables[0]?.chunks.map((c) => c.items.length)).toEqual([99, 99, 52]);
    const committer = await commit(counting, committables);
    expect(sizes.sort((a, b) => b - a)).toEqual([100, 100, 53]);
    expect(committer.stats.committed).toBe(3);
    const written = await items();
    expect(Object.keys(written)).toHaveLength(250);
    expect(written['c249']).toEqual({ pk: 'c249', total: 249, orders: 1, last: 249 });
    // A commit that fails after its first chunk (one at a time here): committing again skips that chunk only.
    const second = await stage(sink, many, 5);
    let transactions = 0;
    const failing = orderSink({
      commitConcurrency: 1,
      client: clientWith(async (command, _input, send) => {
        if (command === 'TransactWriteItemsCommand' && ++transactions === 2) {
          throw Object.assign(new Error('boom'), { name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
        }
        return send();
      }),
    });
    await expect(commit(failing, second)).rejects.toBeInstanceOf(DynamoDbSinkError);
    expect((await items())['c000']).toMatchObject({ orders: 2 });
    expect((await items())['c249']).toMatchObject({ orders: 1 });
    const resumed = await commit(orderSink({ client: tokenlessClient() }), second);
    expect(resumed.stats).toEqual({ committed: 2, alreadyCommitted: 1, retries: 0 });
    expect((await items())['c249']).toEqual({ pk: 'c249', total: 498, orders: 2, last: 249 });
    expect((await items())['c000']).toEqual({ pk: 'c000', total: 0, orders: 2, last: 0 });

    // With a jobId (fenced), the fence check rides along too: chunks of at most 98.
    sizes.length = 0;
    const fenced = await stage(orderSink({ jobId: 'orders' }), many, 6);
    expect(fenced[0]?.chunks.map((c) => c.items.length)).toEqual([98, 98, 54]);
    await commit(orderSink({ jobId: 'orders', client: countingClient }), fenced);
    expect(sizes.sort((a, b) => b - a)).toEqual([100, 100, 56]);
    expect((await items())['c249']).toMatchObject({ orders: 3 });
  });

  it('retries conflicts, throttling and server errors with backoff, and a lost response does not apply twice', async () => {
    let calls = 0;
    const flaky = orderSink({
      client: clientWith(async (command, _input, send) => {
        if (command !== 'TransactWriteItemsCommand') return send();
        calls++;
        if (calls === 1) {
          throw new TransactionCanceledException({
            message: 'Transaction cancelled',
            $metadata: { httpStatusCode: 400 },
            CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
          });
        }
        if (calls === 2) throw new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: { httpStatusCode: 400 } });
        if (calls === 3) throw Object.assign(new Error('internal'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } });
        if (calls === 4) {
          // Applied, but the response is lost on the way back.
          await send();
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        }
        return send();
      }),
    });
    const committer = await commit(flaky, await stage(flaky, orders, 1));
    expect(calls).toBe(5);
    expect(committer.stats.retries).toBe(4);
    expect((await items())['ann']).toEqual({ pk: 'ann', total: 12.5, orders: 2, last: 2.5 });
  });

  it('gives up with a retriable typed error when retries run out, and a non-retriable one when DynamoDB refuses', async () => {
    const throttled = orderSink({
      retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 },
      client: clientWith(async (command, _input, send) => {
        if (command === 'TransactWriteItemsCommand') throw new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} });
        return send();
      }),
    });
    const exhausted = await commit(throttled, await stage(throttled, orders, 1)).catch((e: unknown) => e);
    expect(exhausted).toBeInstanceOf(DynamoDbSinkError);
    expect((exhausted as DynamoDbSinkError).retriable).toBe(true);
    expect((exhausted as DynamoDbSinkError).message).toMatch(/after 3 attempts/);
    expect((exhausted as DynamoDbSinkError).cause).toBeInstanceOf(ProvisionedThroughputExceededException);

    const missing = orderSink({ table: 'no-such-table' });
    const refused = await commit(missing, await stage(missing, orders, 1)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DynamoDbSinkError);
    expect((refused as DynamoDbSinkError).retriable).toBe(false);
    expect(await items()).toEqual({});
  });

  it('keeps committables of different subtasks, attempts and checkpoints apart', async () => {
    const sink = orderSink();
    const a = await stage(sink, [{ customer: 'ann', amount: 1 }], 1, ctx(0, 'attempt-1'));
    const b = await stage(sink, [{ customer: 'ann', amount: 1 }], 1, ctx(1, 'attempt-1'));
    const c = await stage(sink, [{ customer: 'ann', amount: 1 }], 1, ctx(0, 'attempt-2'));
    await commit(sink, [...a, ...b, ...c, ...a]);
    expect((await items())['ann']).toMatchObject({ total: 3, orders: 3 });
  });

  it('puts markers into a separate marker table, and works with a sort key in the same table', async () => {
    const markerTable = `${table}-markers`;
    await ensureTable({ tableName: markerTable, partitionKey: { name: 'pk' }, timeToLiveAttribute: 'sluiceMarkerExpiresAt', client: dynamo.client });
    const sink = orderSink({ marker: { table: markerTable } });
    const committables = await stage(sink, orders, 2);
    await commit(sink, committables);
    await commit(sink, committables);
    expect(await markers()).toBe(0);
    expect(await markers(markerTable)).toBe(1);
    expect((await items())['cy']).toMatchObject({ total: 0.3 });

    // Same table with a sort key: markers put a constant of the sort key's type into it (looked up once).
    for (const [type, value] of [['S', { S: '#sluice-commit' }], ['N', { N: '0' }]] as const) {
      const sorted = `${table}-sorted-${type}`;
      await ensureTable({ tableName: sorted, partitionKey: { name: 'pk' }, sortKey: { name: 'sk', type }, client: dynamo.client });
      const sortedSink = dynamoDbSink<Order>({
        table: sorted,
        partitionKey: 'pk',
        sortKey: 'sk',
        toWrites: (o) => ({ type: 'update', key: { pk: o.customer, sk: type === 'S' ? 'totals' : 1 }, add: { total: o.amount } }),
        client: clientWith(),
        retry: FAST_RETRY,
      });
      const sortedCommittables = await stage(sortedSink, orders, 3);
      await commit(sortedSink, sortedCommittables);
      await commit(orderSink({ table: sorted, sortKey: 'sk', client: tokenlessClient() }), sortedCommittables);
      const ann = await dynamo.client.send(
        new GetItemCommand({ TableName: sorted, Key: { pk: { S: 'ann' }, sk: type === 'S' ? { S: 'totals' } : { N: '1' } } }),
      );
      expect(unmarshall(ann.Item!)).toMatchObject({ pk: 'ann', total: 12.5 });
      const txn = sortedCommittables[0]?.txn ?? '';
      expect(txn).toMatch(new RegExp(`^${sorted}/e1-a0-[0-9a-f]{12}/0/c3$`));
      const marker = await dynamo.client.send(new GetItemCommand({ TableName: sorted, Key: { pk: { S: `#sluice-commit#${txn}#0` }, sk: value } }));
      expect(marker.Item?.['sluiceTxn']?.S).toBe(txn);
    }
  });

  it('refuses same-table markers when the partition key is not a string', async () => {
    const numeric = `${table}-numeric`;
    await ensureTable({ tableName: numeric, partitionKey: { name: 'id', type: 'N' }, sortKey: { name: 'sk' }, client: dynamo.client });
    const sink = dynamoDbSink<Order>({
      table: numeric,
      partitionKey: 'id',
      sortKey: 'sk',
      toWrites: (o) => ({ type: 'put', item: { id: o.amount, sk: 'x' } }),
      client: clientWith(),
    });
    const error = await commit(sink, await stage(sink, orders, 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DynamoDbSinkError);
    expect((error as Error).message).toMatch(/separate marker table/);
  });

  it('reports a throwing toWrites and an invalid write as UserFunctionErrors with the record origin', async () => {
    const sink = orderSink({
      toWrites: (o) => {
        if (o.amount < 0) throw new Error('negative amount');
        return o.amount === 0 ? { type: 'put', item: { nokey: 1 } } : null;
      },
    });
    const writer = await sink.createWriter(ctx());
    const error = await Promise.resolve()
      .then(() => writer.write(batchOf([{ customer: 'a', amount: -1 }], [0], 'orders.jsonl', [42])))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect((error as UserFunctionError).origin).toEqual({ split: 'orders.jsonl', offset: 42 });
    expect((error as Error).message).toMatch(/orders-sink.*negative amount/);
    const invalid = await Promise.resolve()
      .then(() => writer.write(batchOf([{ customer: 'a', amount: 0 }], [0])))
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(UserFunctionError);
    expect((invalid as Error).cause).toBeInstanceOf(DynamoDbSinkError);
    expect(writer.prepareCommit(1)).toEqual([]);
  });

  it('without checkpoints, commits by itself every flushEveryWrites writes and in finish', async () => {
    const sink = orderSink({ flushEveryWrites: 2 });
    const writer = await sink.createWriter(ctx(0, 'attempt-1', false));
    await writer.write(batchOf(orders.slice(0, 2), [0, 1]));
    expect(Object.keys(await items())).toEqual(expect.arrayContaining(['ann', 'bob']));
    await writer.write(batchOf(orders.slice(2, 3), [0]));
    expect((await items())['ann']).toMatchObject({ total: 10 });
    await writer.finish?.();
    expect((await items())['ann']).toMatchObject({ total: 12.5, orders: 2 });
  });
});

describe('dynamoDbSink, upsert', () => {
  interface Row {
    readonly id: string;
    readonly name?: string;
    readonly deleted?: boolean;
  }

  function rowSink(client: DynamoDBClient = clientWith()) {
    return dynamoDbSink<Row>({
      table,
      partitionKey: 'pk',
      mode: 'upsert',
      toWrites: (r) =>
        r.deleted === true
          ? { type: 'delete', key: { pk: r.id } }
          : r.name === undefined
            ? { type: 'update', key: { pk: r.id }, set: { touched: true }, remove: ['name'] }
            : { type: 'put', item: { pk: r.id, name: r.name } },
      client,
      retry: FAST_RETRY,
    });
  }

  it('writes puts and deletes in batches of 25, retries unprocessed items and is idempotent on re-commit', async () => {
    const batches: number[] = [];
    let first = true;
    const client = clientWith(async (command, input, send) => {
      if (command !== 'BatchWriteItemCommand') return send();
      const requestItems = input['RequestItems'] as Record<string, unknown[]>;
      const requests = requestItems[table]!;
      batches.push(requests.length);
      if (first) {
        // DynamoDB processed only the first 10 (throttled): the rest comes back as UnprocessedItems.
        first = false;
        requestItems[table] = requests.slice(0, 10);
        const out = (await send()) as { output: Record<string, unknown> };
        return { ...out, output: { ...out.output, UnprocessedItems: { [table]: requests.slice(10) } } };
      }
      return send();
    });
    const rows: Row[] = [
      ...Array.from({ length: 60 }, (_, i) => ({ id: `r${i}`, name: `row ${i}` })),
      { id: 'r1', deleted: true },
      { id: 'r2' },
    ];
    const sink = rowSink(client);
    const committables = await stage(sink, rows, 1);
    const committer = await commit(sink, committables);
    expect(batches).toEqual([25, 15, 25, 10]);
    expect(committer.stats.retries).toBe(1);
    const written = await items();
    expect(Object.keys(written)).toHaveLength(59);
    expect(written['r1']).toBeUndefined();
    expect(written['r2']).toEqual({ pk: 'r2', touched: true });
    expect(written['r3']).toEqual({ pk: 'r3', name: 'row 3' });
    await commit(sink, committables);
    expect(await items()).toEqual(written);
    expect(await markers()).toBe(0);
  });

  it('under the cluster coordinator a late commit of checkpoint N cannot overwrite N+1: superseded writes are skipped and counted', async () => {
    const sink = rowSink();
    const descriptor = sink.externalCommit!;
    const n = await stage(sink, [{ id: 'a', name: 'a@5' }, { id: 'b', name: 'b@5' }, { id: 'c', name: 'c@5' }, { id: 'd' }], 5);
    const n1 = await stage(sink, [{ id: 'a', name: 'a@6' }, { id: 'b', deleted: true }, { id: 'd', name: 'd@6' }], 6);
    const coordinator = dynamoDbCommitterFromDescriptor(descriptor, clientWith());
    await coordinator.commit(n1);
    // The stale CommitSinks invocation of checkpoint 5 lands afterwards.
    const late = dynamoDbCommitterFromDescriptor(descriptor, clientWith());
    await late.commit(n);
    const written = await items();
    expect(written['a']).toEqual({ pk: 'a', name: 'a@6', sluiceCheckpoint: 6 });
    expect(written['d']).toEqual({ pk: 'd', name: 'd@6', sluiceCheckpoint: 6 });
    expect(written['c']).toEqual({ pk: 'c', name: 'c@5', sluiceCheckpoint: 5 });
    // A delete takes the attribute with it: the late put of b comes back (docs: use transactional sinks to delete).
    expect(written['b']).toEqual({ pk: 'b', name: 'b@5', sluiceCheckpoint: 5 });
    expect(late.stats).toMatchObject({ committed: 1, superseded: 2, retries: 0 });
    // A repeat of the newest commit rewrites its own values; committing in order works as before.
    await coordinator.commit(n1);
    expect((await items())['a']).toEqual({ pk: 'a', name: 'a@6', sluiceCheckpoint: 6 });
    expect(coordinator.stats.superseded ?? 0).toBe(0);
    const embedded = await commit(sink, n);
    expect(embedded.stats.superseded).toBeUndefined();
  });

  it('refuses ADD, which is not idempotent', async () => {
    const sink = dynamoDbSink<Order>({
      table,
      partitionKey: 'pk',
      mode: 'upsert',
      toWrites: (o) => ({ type: 'update', key: { pk: o.customer }, add: { total: o.amount } }),
      client: clientWith(),
    });
    const writer = await sink.createWriter(ctx());
    expect(() => writer.write(batchOf(orders, [0, 1, 2, 3, 4]))).toThrow(/not allowed in 'upsert' mode/);
  });
});

describe('ensureTable', () => {
  it('creates once, then finds the table, and refuses another key schema', async () => {
    const name = `${table}-ensure`;
    expect(await ensureTable({ tableName: name, partitionKey: { name: 'id', type: 'N' }, client: dynamo.client })).toBe('created');
    expect(await ensureTable({ tableName: name, partitionKey: { name: 'id', type: 'N' }, client: dynamo.client })).toBe('exists');
    await expect(ensureTable({ tableName: name, partitionKey: { name: 'other' }, client: dynamo.client })).rejects.toBeInstanceOf(ConfigError);
  });
});
