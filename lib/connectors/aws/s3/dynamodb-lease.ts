import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CheckpointIoError } from '../../../storage/errors.ts';
import type { StorageLease } from '../../../storage/checkpoint-storage.ts';
import { DirectoryInUseError, describeHolder, holderState, newLockHolder, type LockHolder } from '../../../storage/fs/directory-lock.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import { COMMIT_TABLE_PARTITION_KEY, COMMIT_TABLE_SORT_KEY } from './dynamodb-commit-point.ts';

/** The lease item's sort key in the commit table: checkpoint ids start at 1, so 0 is never a commit record. */
export const LEASE_ITEM_ID = 0;

export interface DynamoDbLeaseOptions {
  /** A lease not renewed for this long may be taken by another job. @default 30_000 */
  readonly durationMs?: number;
  /** How often the holder renews it. @default a third of `durationMs` */
  readonly renewMs?: number;
}

/** Leases held by this process (table and location): a second job of the same process is refused too. */
const heldHere = new Set<string>();

function isConditionFailed(error: unknown): boolean {
  return awsErrorName(error) === 'ConditionalCheckFailedException';
}

function holderOf(item: Record<string, AttributeValue> | undefined): (LockHolder & { expiresAt: number }) | undefined {
  if (item?.['token']?.S === undefined) return undefined;
  return {
    pid: Number(item['pid']?.N),
    host: item['host']?.S ?? '?',
    since: Number(item['since']?.N),
    processStart: item['processStart']?.S,
    token: item['token'].S,
    expiresAt: Number(item['expiresAt']?.N),
  };
}

/**
 * One running job per S3 checkpoint location: a lease item in the commit table (the location's partition, sort
 * key 0) put on the condition that none exists, it expired, or it is a lease whose process is gone from this host
 * (a job killed with SIGKILL does not block its rerun). The holder renews it every `renewMs`; a lease not renewed
 * for `durationMs` (its job's host died) can be taken by another job. Refusal is DirectoryInUseError (exit 2).
 */
export class DynamoDbLease implements StorageLease {
  private timer: NodeJS.Timeout | undefined;
  private released = false;

  private constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly location: string,
    private readonly holder: LockHolder,
    private readonly durationMs: number,
  ) {}

  static async acquire(client: DynamoDBClient, table: string, location: string, options: DynamoDbLeaseOptions = {}): Promise<DynamoDbLease> {
    const durationMs = options.durationMs ?? 30_000;
    const lease = new DynamoDbLease(client, table, location, newLockHolder(), durationMs);
    const key = `${table}\u0000${location}`;
    if (heldHere.has(key)) throw lease.refuse(`a job in this process (pid ${process.pid}) holds it`, undefined);
    heldHere.add(key);
    try {
      await lease.take();
    } catch (err) {
      heldHere.delete(key);
      throw err;
    }
    lease.timer = setInterval(() => void lease.renew(), options.renewMs ?? Math.max(1, Math.floor(durationMs / 3)));
    // Renewals alone must not keep the process alive once the job has ended.
    lease.timer.unref();
    return lease;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    heldHere.delete(`${this.table}\u0000${this.location}`);
    await this.client
      .send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: this.key(),
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': { S: this.holder.token } },
        }),
      )
      .catch(() => undefined);
  }

  private key(): Record<string, AttributeValue> {
    return { [COMMIT_TABLE_PARTITION_KEY]: { S: this.location }, [COMMIT_TABLE_SORT_KEY]: { N: String(LEASE_ITEM_ID) } };
  }

  private where(): string {
    return `DynamoDB table ${this.table}, lease item ${this.location} #${LEASE_ITEM_ID}`;
  }

  private async take(): Promise<void> {
    const now = Date.now();
    try {
      await this.put('attribute_not_exists(#pk) OR #expiresAt < :now', { '#pk': COMMIT_TABLE_PARTITION_KEY, '#expiresAt': 'expiresAt' }, { ':now': { N: String(now) } }, now);
      return;
    } catch (error) {
      if (!isConditionFailed(error)) throw new CheckpointIoError('take the lease of', this.where(), error);
    }
    const current = await this.read();
    if (current !== undefined && holderState(current) === 'gone') {
      // Its process is gone from this host: take it over, unless another job just did.
      try {
        await this.put('#token = :theirs', { '#token': 'token' }, { ':theirs': { S: current.token } }, now);
        return;
      } catch (error) {
        if (!isConditionFailed(error)) throw new CheckpointIoError('take over the lease of', this.where(), error);
      }
    }
    const holder = current ?? (await this.read());
    const who = holder === undefined ? 'another job just took it' : `${describeHolder(holder)}, lease valid until ${new Date(holder.expiresAt).toISOString()} unless renewed`;
    throw this.refuse(who, holder);
  }

  private refuse(who: string, holder: LockHolder | undefined): DirectoryInUseError {
    return new DirectoryInUseError(
      `the checkpoint location ${this.location} is in use by another job: ${who} (${this.where()}). ` +
        'Two jobs on one checkpoint location would resume and delete each other\'s checkpoints: wait for that job to end, or pass another --checkpoint-dir.',
      holder,
    );
  }

  private async put(condition: string, names: Record<string, string>, values: Record<string, AttributeValue>, now: number): Promise<void> {
    const h = this.holder;
    await this.client.send(
      new PutItemCommand({
        TableName: this.table,
        Item: {
          ...this.key(),
          pid: { N: String(h.pid) },
          host: { S: h.host },
          since: { N: String(h.since) },
          ...(h.processStart === undefined ? {} : { processStart: { S: h.processStart } }),
          token: { S: h.token },
          expiresAt: { N: String(now + this.durationMs) },
        },
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  private async read(): Promise<(LockHolder & { expiresAt: number }) | undefined> {
    try {
      const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: this.key(), ConsistentRead: true }));
      return holderOf(out.Item);
    } catch (cause) {
      throw new CheckpointIoError('read the lease of', this.where(), cause);
    }
  }

  /** Extends the lease while this job holds it. A failed renewal is retried at the next one. */
  private async renew(): Promise<void> {
    if (this.released) return;
    await this.client
      .send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.key(),
          UpdateExpression: 'SET #expiresAt = :expiresAt',
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#expiresAt': 'expiresAt', '#token': 'token' },
          ExpressionAttributeValues: { ':expiresAt': { N: String(Date.now() + this.durationMs) }, ':token': { S: this.holder.token } },
        }),
      )
      .catch(() => undefined);
  }
}
