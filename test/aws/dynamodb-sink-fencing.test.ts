import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { batchOf, FencedError, type FencingToken } from '../../lib/core/index.ts';
import type { SinkContext } from '../../lib/connectors/sink.ts';
import { dynamoDbSink, type DynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import type { DynamoDbCommittable } from '../../lib/connectors/aws/dynamodb/committable.ts';
import type { DynamoDbCommitter } from '../../lib/connectors/aws/dynamodb/dynamodb-committer.ts';
import { readSinkFence } from '../../lib/connectors/aws/dynamodb/sink-fence.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

interface Order {
  readonly customer: string;
  readonly amount: number;
}

let dynamo: DynamoDbLocal;
let tableCounter = 0;
let table: string;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

beforeEach(async () => {
  table = `fenced-${++tableCounter}`;
  await ensureTable({ tableName: table, partitionKey: { name: 'pk' }, client: dynamo.client });
});

const RETRY = { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 4 };

/** A sink of orders; `jobId` (which turns fencing on) defaults to the table's name here, `null` leaves it unset. */
function orderSink(options: { sortKey?: string; jobId?: string | null } = {}): DynamoDbSink<Order> {
  const { jobId = table, sortKey } = options;
  return dynamoDbSink<Order>({
    table,
    partitionKey: 'pk',
    ...(sortKey === undefined ? {} : { sortKey }),
    ...(jobId === null ? {} : { jobId }),
    toWrites: (o) => ({
      type: 'update',
      key: { pk: o.customer, ...(sortKey === undefined ? {} : { [sortKey]: 'x' }) },
      add: { total: o.amount },
    }),
    client: dynamo.client,
    retry: RETRY,
  });
}

const ctx = (fencing: FencingToken, subtask = 0): SinkContext => ({ subtask, parallelism: 2, operatorName: 'orders', fencing, checkpointing: true });

async function stage(sink: DynamoDbSink<Order>, fencing: FencingToken, records: Order[], checkpointId: number): Promise<DynamoDbCommittable[]> {
  const writer = await sink.createWriter(ctx(fencing));
  await writer.write(batchOf(records, records.map((_, i) => i)));
  return writer.prepareCommit(checkpointId);
}

/** What an attempt's sink operator does at open: creates its committer and commits the restored committables. */
async function startAttempt(sink: DynamoDbSink<Order>, fencing: FencingToken, restored: DynamoDbCommittable[] = []): Promise<DynamoDbCommitter> {
  const committer = (await sink.createCommitter(ctx(fencing))) as DynamoDbCommitter;
  await committer.commit(restored);
  return committer;
}

/** The table as a reader sees it: user items by key, commit markers and the fence left out. */
async function userItems(): Promise<Record<string, unknown>> {
  const page = await dynamo.client.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  const out: Record<string, unknown> = {};
  for (const item of page.Items ?? []) {
    const value = unmarshall(item);
    if (!String(value['pk']).startsWith('#sluice-commit#')) out[String(value['pk'])] = value['total'];
  }
  return out;
}

const OLD = { attempt: 0, epoch: 10 };
const MARKERS = { table: '', partitionKey: 'pk', sortKey: undefined, keyPrefix: '#sluice-commit#', ttl: undefined };
const NEW = { attempt: 1, epoch: 11 };

describe('dynamoDbSink, fencing', () => {
  it('refuses a zombie commit of an older epoch once a newer attempt started, and the zombie changes nothing', async () => {
    const sink = orderSink();
    const zombie = await startAttempt(sink, OLD);
    expect(await readSinkFence(dynamo.client, { ...MARKERS, table }, table)).toEqual(OLD);
    const early = await stage(sink, OLD, [{ customer: 'ann', amount: 1 }], 1);
    await zombie.commit(early);
    const late = await stage(sink, OLD, [{ customer: 'ann', amount: 100 }, { customer: 'bob', amount: 100 }], 2);

    // The newer attempt starts (restoring checkpoint 1, which is committed already) and raises the fence.
    const current = await startAttempt(sink, NEW, early);
    const before = await userItems();
    expect(before).toEqual({ ann: 1 });

    // The zombie, still running, tries to commit what it prepared for checkpoint 2: refused, typed, not retriable.
    const refused = await zombie.commit(late).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(FencedError);
    expect((refused as FencedError).offered).toEqual(OLD);
    expect((refused as FencedError).current).toEqual(NEW);
    expect((refused as FencedError).retriable).toBe(false);
    expect(await userItems()).toEqual(before);

    // A zombie that starts only now (a stale worker's first commit) cannot lower the fence either.
    await expect(startAttempt(sink, OLD)).rejects.toBeInstanceOf(FencedError);
    expect(await readSinkFence(dynamo.client, { ...MARKERS, table }, table)).toEqual(NEW);

    // The newer attempt commits as usual, and so does every subtask of the same epoch.
    await current.commit(await stage(sink, NEW, [{ customer: 'bob', amount: 2 }], 3));
    const sibling = await startAttempt(sink, NEW);
    await sibling.commit(await stage(sink, NEW, [{ customer: 'cy', amount: 3 }], 4));
    expect(await userItems()).toEqual({ ann: 1, bob: 2, cy: 3 });
  });

  it('fences each job of a table on its own, and with a sort key in the table', async () => {
    await ensureTable({ tableName: `${table}-sk`, partitionKey: { name: 'pk' }, sortKey: { name: 'sk' }, client: dynamo.client });
    table = `${table}-sk`;
    const withSortKey = orderSink({ sortKey: 'sk' });
    const zombie = await startAttempt(withSortKey, OLD);
    await startAttempt(withSortKey, NEW);
    await expect(zombie.commit(await stage(withSortKey, OLD, [{ customer: 'ann', amount: 1 }], 1))).rejects.toBeInstanceOf(FencedError);
    expect(await userItems()).toEqual({});
    // Another job (another jobId) in the same table has its own fence: epoch 1 is not refused there.
    const other = dynamoDbSink<Order>({
      table,
      partitionKey: 'pk',
      sortKey: 'sk',
      jobId: 'other-job',
      toWrites: (o) => ({ type: 'update', key: { pk: o.customer, sk: 'x' }, add: { total: o.amount } }),
      client: dynamo.client,
      retry: RETRY,
    });
    const otherCommitter = await startAttempt(other, { attempt: 0, epoch: 1 });
    const writer = await other.createWriter(ctx({ attempt: 0, epoch: 1 }));
    await writer.write(batchOf([{ customer: 'dan', amount: 4 }], [0]));
    await otherCommitter.commit(await writer.prepareCommit(1));
    expect(await userItems()).toEqual({ dan: 4 });
  });

  it('does not fence without a jobId: a job started later on the same table leaves an earlier one committing', async () => {
    // Two jobs write to one table, neither names itself: the second starts later, with a higher epoch.
    const first = orderSink({ jobId: null });
    const second = orderSink({ jobId: null });
    const firstCommitter = await startAttempt(first, OLD);
    await firstCommitter.commit(await stage(first, OLD, [{ customer: 'ann', amount: 1 }], 1));
    const secondCommitter = await startAttempt(second, { attempt: 0, epoch: 500 });
    await secondCommitter.commit(await stage(second, { attempt: 0, epoch: 500 }, [{ customer: 'bob', amount: 2 }], 1));
    // The first job goes on committing, and so does a restart of it (its epoch + 1, still below the second's).
    await firstCommitter.commit(await stage(first, OLD, [{ customer: 'cy', amount: 3 }], 2));
    const restarted = await startAttempt(first, NEW);
    await restarted.commit(await stage(first, NEW, [{ customer: 'dan', amount: 4 }], 3));
    await secondCommitter.commit(await stage(second, { attempt: 0, epoch: 500 }, [{ customer: 'eve', amount: 5 }], 2));
    expect(await userItems()).toEqual({ ann: 1, bob: 2, cy: 3, dan: 4, eve: 5 });
    // Nothing fenced anything: no fence item exists.
    expect(await readSinkFence(dynamo.client, { ...MARKERS, table }, table)).toBeUndefined();
  });

  it('keeps the writes of two jobs apart that run with identical tokens and no jobId', async () => {
    // Two hosts started a job each in the same millisecond: same epoch, same attempt, same subtask and checkpoint.
    const first = orderSink({ jobId: null });
    const second = orderSink({ jobId: null });
    const a = await stage(first, OLD, [{ customer: 'ann', amount: 1 }], 1);
    const b = await stage(second, OLD, [{ customer: 'bob', amount: 2 }], 1);
    const firstCommitter = await startAttempt(first, OLD, a);
    const secondCommitter = await startAttempt(second, OLD, b);
    expect(await userItems()).toEqual({ ann: 1, bob: 2 });
    expect(firstCommitter.stats.committed + secondCommitter.stats.committed).toBe(2);
    expect(a[0]?.txn).not.toBe(b[0]?.txn);
    // With explicit, distinct jobIds (fenced) the names are apart as well.
    const fencedA = await stage(orderSink({ jobId: 'job-a' }), OLD, [{ customer: 'cy', amount: 3 }], 1);
    const fencedB = await stage(orderSink({ jobId: 'job-a' }), OLD, [{ customer: 'dan', amount: 4 }], 1);
    expect(fencedA[0]?.txn).not.toBe(fencedB[0]?.txn);
  });
});
