import { createHash } from 'node:crypto';
import {
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import {
  CONTROL_TABLE_PARTITION_KEY,
  CONTROL_TABLE_SORT_KEY,
  ControlKeys,
  jobPartition,
  type AckItem,
  type ClusterConfigItem,
  type ControlItem,
  type LeaseItem,
  type WorkerHeartbeatItem,
} from '../../../cluster/control-items.ts';
import type { AckWriter, ControlReader, FencedWriteResult } from '../../../cluster/ports.ts';
import { awsClientConfig, type AwsClientOverrides } from '../client-config.ts';
import { ClusterControlError, controlTableError, failedOnCondition } from './worker-control-errors.ts';

type AttributeMap = Record<string, AttributeValue>;

export interface WorkerControlTableOptions {
  /** The control table (pk `job#<id>`, sk), created by `sluice aws init` or the CDK app. */
  readonly tableName: string;
  readonly jobId: string;
  /** A client to share; the table does not destroy it. @default one built from `clientOverrides`, destroyed by `close` */
  readonly client?: DynamoDBClient;
  /** Endpoint, region, credentials for the client it builds. @default the SDK's default chains */
  readonly clientOverrides?: AwsClientOverrides;
}

const MARSHALL = { removeUndefinedValues: true } as const;

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isOptionalText(value: unknown): value is string | undefined {
  return value === undefined || typeof value === 'string';
}

/** Attribute-name placeholders: `owner` is a DynamoDB reserved word, and placeholders keep every expression alike. */
const NAMES = {
  '#owner': 'owner',
  '#epoch': 'epoch',
  '#counter': 'counter',
  '#slot': 'slot',
  '#pending': 'pendingOwner',
} as const;

/**
 * The worker half of a job's control table: reads `config` and `control`, writes fenced acks, and keeps `lease#`
 * and `worker#` items. Items are the plain objects of lib/cluster/control-items.ts marshalled at top level beside
 * `pk`/`sk`, as the coordinator half stores them, so each half reads the other's items.
 *
 * Every take, handoff, local restart and release is one TransactWriteItems that also increments
 * `control.leaseGeneration` (creating `control` when absent). Each write is conditioned on the lease as read, so a
 * repeat after success changes nothing; a deterministic ClientRequestToken additionally makes a repeat within
 * DynamoDB's 10-minute window report success instead of a failed condition (beyond it, the condition still holds the
 * line, and the keeper's next read shows what happened).
 */
export class WorkerControlTable implements ControlReader, AckWriter {
  readonly tableName: string;
  readonly jobId: string;
  private readonly client: DynamoDBClient;
  private readonly ownsClient: boolean;
  private readonly pk: string;

  constructor(options: WorkerControlTableOptions) {
    this.tableName = options.tableName;
    this.jobId = options.jobId;
    this.pk = jobPartition(options.jobId);
    this.ownsClient = options.client === undefined;
    this.client = options.client ?? new DynamoDBClient(awsClientConfig('dynamodb', options.clientOverrides));
  }

  async readConfig(): Promise<ClusterConfigItem | undefined> {
    return (await this.getItem(ControlKeys.config)) as ClusterConfigItem | undefined;
  }

  async readControl(): Promise<ControlItem | undefined> {
    return (await this.getItem(ControlKeys.control)) as ControlItem | undefined;
  }

  /** [ConditionCheck lease owner+epoch, Put ack]: `fenced` when the lease moved on (nothing written). */
  async putAck(ack: AckItem): Promise<FencedWriteResult> {
    const items: TransactWriteItem[] = [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: this.key(ControlKeys.lease(ack.slot)),
          ConditionExpression: '#owner = :owner AND #epoch = :epoch',
          ExpressionAttributeNames: { '#owner': NAMES['#owner'], '#epoch': NAMES['#epoch'] },
          ExpressionAttributeValues: marshall({ ':owner': ack.owner, ':epoch': ack.epoch }),
        },
      },
      { Put: { TableName: this.tableName, Item: this.item(ControlKeys.ack(ack.checkpointId, ack.slot), ack) } },
    ];
    // No explicit token: the SDK generates one per call and reuses it for its own retries, and an ack put twice is
    // the same item.
    return this.transact(`put ${ack.kind} of checkpoint ${ack.checkpointId} for slot ${ack.slot}`, items, undefined);
  }

  async readLeases(): Promise<LeaseItem[]> {
    const items = await this.query(ControlKeys.leasePrefix);
    return items.map((item) => {
      const { slot, owner, epoch, counter, pendingOwner } = item;
      if (!isCount(slot) || !isCount(epoch) || !isCount(counter) || !isOptionalText(owner) || !isOptionalText(pendingOwner)) {
        throw this.malformed('lease', item);
      }
      return { slot, epoch, counter, ...(owner === undefined ? {} : { owner }), ...(pendingOwner === undefined ? {} : { pendingOwner }) };
    });
  }

  async readWorkers(): Promise<WorkerHeartbeatItem[]> {
    const items = await this.query(ControlKeys.workerPrefix);
    return items.map((item) => {
      const { workerId, counter, at } = item;
      if (typeof workerId !== 'string' || !isCount(counter) || typeof at !== 'number') throw this.malformed('worker heartbeat', item);
      return { workerId, counter, at };
    });
  }

  private malformed(what: string, item: Record<string, unknown>): ClusterControlError {
    return new ClusterControlError(
      `read a ${what} item`,
      this.tableName,
      new TypeError(`malformed ${what} item in job ${this.jobId}: ${JSON.stringify(item)}; was it written by another tool?`),
      false,
    );
  }

  /**
   * Takes `slot` for `workerId` at epoch `observed.epoch + 1` (1 for a missing item), conditioned on the owner, epoch
   * and counter as read (or on the item not existing).
   */
  async takeLease(slot: number, workerId: string, observed: LeaseItem | undefined): Promise<FencedWriteResult> {
    const epoch = (observed?.epoch ?? 0) + 1;
    let condition: string;
    const values: Record<string, unknown> = { ':me': workerId, ':slot': slot, ':newEpoch': epoch, ':newCounter': (observed?.counter ?? 0) + 1 };
    if (observed === undefined) {
      condition = `attribute_not_exists(${CONTROL_TABLE_SORT_KEY})`;
    } else {
      condition = `${observed.owner === undefined ? 'attribute_not_exists(#owner)' : '#owner = :owner'} AND #epoch = :epoch AND #counter = :counter`;
      Object.assign(values, { ':epoch': observed.epoch, ':counter': observed.counter }, observed.owner === undefined ? {} : { ':owner': observed.owner });
    }
    return this.leaseTransaction(`take lease of slot ${slot}`, slot, {
      update: 'SET #owner = :me, #epoch = :newEpoch, #counter = :newCounter, #slot = :slot REMOVE #pending',
      condition,
      values,
      token: ['take', slot, workerId, observed?.owner ?? '', observed?.epoch ?? 0, observed?.counter ?? -1],
    });
  }

  /** Gives the slot to `to` (the lease's `pendingOwner`) at epoch + 1. */
  async handOverLease(slot: number, workerId: string, epoch: number, to: string): Promise<FencedWriteResult> {
    return this.leaseTransaction(`hand over slot ${slot} to ${to}`, slot, {
      update: 'SET #owner = :to, #epoch = :newEpoch, #counter = #counter + :one REMOVE #pending',
      condition: '#owner = :me AND #epoch = :epoch AND #pending = :to',
      values: { ':me': workerId, ':to': to, ':epoch': epoch, ':newEpoch': epoch + 1, ':one': 1 },
      token: ['handover', slot, workerId, epoch, to],
    });
  }

  /** Same owner, epoch + 1: the slot restarts on this worker and its old epoch is fenced. */
  async restartLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    return this.leaseTransaction(`restart slot ${slot} locally`, slot, {
      update: 'SET #epoch = :newEpoch, #counter = #counter + :one',
      condition: '#owner = :me AND #epoch = :epoch',
      values: { ':me': workerId, ':epoch': epoch, ':newEpoch': epoch + 1, ':one': 1 },
      token: ['restart', slot, workerId, epoch],
    });
  }

  /** Removes the owner (and any pending request), keeping the epoch: any worker may take the slot at once. */
  async releaseLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    return this.leaseTransaction(`release slot ${slot}`, slot, {
      update: 'SET #counter = #counter + :one REMOVE #owner, #pending',
      condition: '#owner = :me AND #epoch = :epoch',
      values: { ':me': workerId, ':epoch': epoch, ':one': 1 },
      token: ['release', slot, workerId, epoch],
    });
  }

  /** counter + 1 on the condition that the lease still names this owner and epoch (no generation change). */
  async renewLease(slot: number, workerId: string, epoch: number): Promise<FencedWriteResult> {
    return this.update(`renew lease of slot ${slot}`, ControlKeys.lease(slot), {
      UpdateExpression: 'SET #counter = #counter + :one',
      ConditionExpression: '#owner = :me AND #epoch = :epoch',
      ExpressionAttributeNames: { '#owner': NAMES['#owner'], '#epoch': NAMES['#epoch'], '#counter': NAMES['#counter'] },
      ExpressionAttributeValues: marshall({ ':me': workerId, ':epoch': epoch, ':one': 1 }),
    });
  }

  /** Sets `pendingOwner` = `workerId` on a lease as read (owner, epoch and pendingOwner unchanged). */
  async askHandoff(slot: number, workerId: string, observed: LeaseItem): Promise<FencedWriteResult> {
    const values: Record<string, unknown> = { ':me': workerId, ':owner': observed.owner, ':epoch': observed.epoch };
    // Already ours counts as success: an SDK retry of an ask that went through must not read as refused.
    let pending = '(attribute_not_exists(#pending) OR #pending = :me)';
    if (observed.pendingOwner !== undefined) {
      pending = '(#pending = :pending OR #pending = :me)';
      values[':pending'] = observed.pendingOwner;
    }
    return this.update(`ask for slot ${slot}`, ControlKeys.lease(slot), {
      UpdateExpression: 'SET #pending = :me',
      ConditionExpression: `#owner = :owner AND #epoch = :epoch AND ${pending}`,
      ExpressionAttributeNames: { '#owner': NAMES['#owner'], '#epoch': NAMES['#epoch'], '#pending': NAMES['#pending'] },
      ExpressionAttributeValues: marshall(values, MARSHALL),
    });
  }

  /** The worker's heartbeat: counter + 1 (creating the item). */
  async beat(workerId: string, at: number): Promise<void> {
    await this.update(`heartbeat of worker ${workerId}`, ControlKeys.worker(workerId), {
      UpdateExpression: 'SET workerId = :id, #at = :at, #counter = if_not_exists(#counter, :zero) + :one',
      ExpressionAttributeNames: { '#at': 'at', '#counter': NAMES['#counter'] },
      ExpressionAttributeValues: marshall({ ':id': workerId, ':at': at, ':zero': 0, ':one': 1 }),
    });
  }

  /** Deletes a worker's heartbeat: its own on a clean exit (`counter` undefined), or a long-dead one as read. */
  async forgetWorker(workerId: string, counter?: number): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: this.key(ControlKeys.worker(workerId)),
          ...(counter === undefined
            ? {}
            : {
                ConditionExpression: '#counter = :counter',
                ExpressionAttributeNames: { '#counter': NAMES['#counter'] },
                ExpressionAttributeValues: marshall({ ':counter': counter }),
              }),
        }),
      );
    } catch (error) {
      if (failedOnCondition(error)) return; // it beat again: not dead after all
      throw controlTableError(`forget worker ${workerId}`, this.tableName, error);
    }
  }

  /** Destroys the client if this table built it. */
  close(): void {
    if (this.ownsClient) this.client.destroy();
  }

  private key(sk: string): AttributeMap {
    return marshall({ [CONTROL_TABLE_PARTITION_KEY]: this.pk, [CONTROL_TABLE_SORT_KEY]: sk });
  }

  private item(sk: string, value: object): AttributeMap {
    return marshall({ ...value, [CONTROL_TABLE_PARTITION_KEY]: this.pk, [CONTROL_TABLE_SORT_KEY]: sk }, MARSHALL);
  }

  private static strip(item: AttributeMap): Record<string, unknown> {
    const { [CONTROL_TABLE_PARTITION_KEY]: _pk, [CONTROL_TABLE_SORT_KEY]: _sk, ...rest } = unmarshall(item);
    return rest;
  }

  private async getItem(sk: string): Promise<Record<string, unknown> | undefined> {
    try {
      const result = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: this.key(sk), ConsistentRead: true }));
      return result.Item === undefined ? undefined : WorkerControlTable.strip(result.Item);
    } catch (error) {
      throw controlTableError(`read ${sk}`, this.tableName, error);
    }
  }

  private async query(prefix: string): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    let start: AttributeMap | undefined;
    try {
      do {
        const page = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
            ExpressionAttributeNames: { '#pk': CONTROL_TABLE_PARTITION_KEY, '#sk': CONTROL_TABLE_SORT_KEY },
            ExpressionAttributeValues: marshall({ ':pk': this.pk, ':prefix': prefix }),
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        );
        for (const item of page.Items ?? []) out.push(WorkerControlTable.strip(item));
        start = page.LastEvaluatedKey;
      } while (start !== undefined);
    } catch (error) {
      throw controlTableError(`read ${prefix} items`, this.tableName, error);
    }
    return out;
  }

  private async update(operation: string, sk: string, input: Omit<ConstructorParameters<typeof UpdateItemCommand>[0], 'TableName' | 'Key'>): Promise<FencedWriteResult> {
    try {
      await this.client.send(new UpdateItemCommand({ TableName: this.tableName, Key: this.key(sk), ...input }));
      return 'written';
    } catch (error) {
      if (input.ConditionExpression !== undefined && failedOnCondition(error)) return 'fenced';
      throw controlTableError(operation, this.tableName, error);
    }
  }

  /** One lease change plus `control.leaseGeneration + 1`, in one transaction. */
  private leaseTransaction(
    operation: string,
    slot: number,
    change: { update: string; condition: string; values: Record<string, unknown>; token: readonly (string | number)[] },
  ): Promise<FencedWriteResult> {
    const names: Record<string, string> = {};
    for (const [placeholder, name] of Object.entries(NAMES)) {
      if (change.update.includes(placeholder) || change.condition.includes(placeholder)) names[placeholder] = name;
    }
    const items: TransactWriteItem[] = [
      {
        Update: {
          TableName: this.tableName,
          Key: this.key(ControlKeys.lease(slot)),
          UpdateExpression: change.update,
          ConditionExpression: change.condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(change.values, MARSHALL),
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: this.key(ControlKeys.control),
          // `control` may not exist before the first take: create it with the coordinator's starting values.
          UpdateExpression: 'SET leaseGeneration = if_not_exists(leaseGeneration, :zero) + :one, sinkCommittedThrough = if_not_exists(sinkCommittedThrough, :zero)',
          ExpressionAttributeValues: marshall({ ':zero': 0, ':one': 1 }),
        },
      },
    ];
    const token = createHash('sha256')
      .update(JSON.stringify([this.tableName, this.pk, ...change.token]))
      .digest('hex')
      .slice(0, 36);
    return this.transact(operation, items, token);
  }

  private async transact(operation: string, items: TransactWriteItem[], token: string | undefined): Promise<FencedWriteResult> {
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: items, ...(token === undefined ? {} : { ClientRequestToken: token }) }));
      return 'written';
    } catch (error) {
      if (failedOnCondition(error, 0)) return 'fenced';
      throw controlTableError(operation, this.tableName, error);
    }
  }
}
