import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbLease, LEASE_ITEM_ID } from '../../lib/connectors/aws/s3/dynamodb-lease.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { DirectoryInUseError } from '../../lib/storage/fs/directory-lock.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

const TABLE = 'sluice-checkpoint-commits';
let dynamo: DynamoDbLocal;
let locations = 0;
const location = (): string => `s3://checkpoints/jobs/lease-${++locations}`;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
  await ensureCheckpointCommitTable(TABLE, { client: dynamo.client });
});
afterAll(async () => {
  await dynamo?.stop();
});

/** A lease item as another job would have written it. */
async function putLease(where: string, holder: { pid: number; host: string; expiresAt: number }): Promise<void> {
  await dynamo.client.send(
    new PutItemCommand({
      TableName: TABLE,
      Item: {
        location: { S: where },
        checkpointId: { N: String(LEASE_ITEM_ID) },
        pid: { N: String(holder.pid) },
        host: { S: holder.host },
        since: { N: String(Date.UTC(2026, 0, 2)) },
        token: { S: 'theirs' },
        expiresAt: { N: String(holder.expiresAt) },
      },
    }),
  );
}

/** The pid of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

describe('S3 checkpoint location lease (DynamoDB commit table)', () => {
  it('lets one job hold a location; a second is refused naming the holder until the first releases it', async () => {
    const where = location();
    const first = await DynamoDbLease.acquire(dynamo.client, TABLE, where);
    // A job of another process on this host, as the item records it.
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await new Promise((r) => other.once('spawn', r));
    await first.release();
    await putLease(where, { pid: other.pid!, host: hostname(), expiresAt: Date.now() + 600_000 });
    const err = await DynamoDbLease.acquire(dynamo.client, TABLE, where).catch((e: unknown) => e);
    other.kill('SIGKILL');
    expect(err).toBeInstanceOf(DirectoryInUseError);
    expect((err as Error).message).toMatch(
      new RegExp(`^the checkpoint location ${where} is in use by another job: pid ${other.pid} on ${hostname()} since .*lease valid until .*--checkpoint-dir`),
    );
    // Of this process too, a second job is refused while the first holds the lease.
    const mine = await DynamoDbLease.acquire(dynamo.client, TABLE, location());
    await expect(DynamoDbLease.acquire(dynamo.client, TABLE, `s3://checkpoints/jobs/lease-${locations}`)).rejects.toThrow(/a job in this process/);
    await mine.release();
  });

  it('takes over the lease of a process gone from this host (killed with SIGKILL) and an expired one from elsewhere', async () => {
    const where = location();
    await putLease(where, { pid: await deadPid(), host: hostname(), expiresAt: Date.now() + 600_000 });
    await (await DynamoDbLease.acquire(dynamo.client, TABLE, where)).release();
    await putLease(where, { pid: 1, host: 'elsewhere.example', expiresAt: Date.now() - 1 });
    await (await DynamoDbLease.acquire(dynamo.client, TABLE, where)).release();
  });

  it('refuses a lease from another host that has not expired', async () => {
    const where = location();
    await putLease(where, { pid: 1, host: 'elsewhere.example', expiresAt: Date.now() + 600_000 });
    await expect(DynamoDbLease.acquire(dynamo.client, TABLE, where)).rejects.toThrow(/pid 1 on elsewhere\.example since 2026-01-02T00:00:00\.000Z/);
  });

  it('renews the lease while held, so it does not expire under its job', async () => {
    const where = location();
    const lease = await DynamoDbLease.acquire(dynamo.client, TABLE, where, { durationMs: 5000, renewMs: 50 });
    try {
      const first = await expiresAt(where);
      await waitUntil('a renewal', async () => (await expiresAt(where)) > first);
      await expect(DynamoDbLease.acquire(dynamo.client, TABLE, where)).rejects.toThrow(DirectoryInUseError);
    } finally {
      await lease.release();
    }
  });
});

async function expiresAt(where: string): Promise<number> {
  const out = await dynamo.client.send(
    new GetItemCommand({ TableName: TABLE, Key: { location: { S: where }, checkpointId: { N: String(LEASE_ITEM_ID) } }, ConsistentRead: true }),
  );
  return Number(out.Item?.['expiresAt']?.N);
}

async function waitUntil(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
