import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  paginateQuery,
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { ClusterControlError, CoordinatorSupersededError } from '../../../cluster/coordinator-errors.ts';
import {
  CONTROL_TABLE_PARTITION_KEY as PK,
  CONTROL_TABLE_SORT_KEY as SK,
  ControlKeys,
  jobPartition,
  type AckItem,
  type ClusterConfigItem,
  type ControlItem,
  type ControlTrigger,
  type CoordinatorItem,
  type RequestItem,
} from '../../../cluster/control-items.ts';
import type { TaskStateHandle } from '../../../checkpoint/types.ts';
import { awsErrorName } from '../kinesis/errors.ts';

const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

function conditionFailed(error: unknown): boolean {
  return awsErrorName(error) === 'ConditionalCheckFailedException';
}

/** What `setTrigger` did: `written`, `present` (this or a newer trigger is there) or `sinksPending`. */
export type SetTriggerResult = 'written' | 'present' | 'sinksPending';

/**
 * The coordinator's half of a job's control table: the `coordinator` item (optimistic `version`, owning
 * execution), `config`, `control` (trigger, completed, sinkCommittedThrough, halted; never `leaseGeneration`, which
 * only lease transactions change), the `ack#` items of a checkpoint and the `request#` items. Items are stored
 * with util-dynamodb's marshall, field names of lib/cluster/control-items.ts at the top level, as the worker half
 * stores them. Every write that moves something forward is conditioned so that a repeated or late one is a no-op.
 */
export class CoordinatorControlTable {
  private readonly partition: string;

  constructor(
    private readonly client: DynamoDBClient,
    readonly table: string,
    readonly jobId: string,
  ) {
    this.partition = jobPartition(jobId);
  }

  private key(sk: string): Record<string, AttributeValue> {
    return { [PK]: { S: this.partition }, [SK]: { S: sk } };
  }

  private where(sk: string): string {
    return `control table ${this.table}, item ${this.partition} / ${sk}`;
  }

  private async get<T>(sk: string): Promise<T | undefined> {
    try {
      const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: this.key(sk), ConsistentRead: true }));
      if (out.Item === undefined) return undefined;
      const { [PK]: _pk, [SK]: _sk, ...rest } = unmarshall(out.Item);
      return rest as T;
    } catch (cause) {
      throw new ClusterControlError(`could not read ${this.where(sk)}`, { cause });
    }
  }

  readConfig(): Promise<ClusterConfigItem | undefined> {
    return this.get<ClusterConfigItem>(ControlKeys.config);
  }

  async readControl(): Promise<ControlItem> {
    const item = await this.get<Partial<ControlItem>>(ControlKeys.control);
    return { ...item, leaseGeneration: item?.leaseGeneration ?? 0, sinkCommittedThrough: item?.sinkCommittedThrough ?? 0 };
  }

  /** The coordinator item, the in-flight checkpoint's handles whole again (their `sharedFiles` from its ack items). */
  async readCoordinator(): Promise<CoordinatorItem | undefined> {
    const stored = await this.get<CoordinatorItem>(ControlKeys.coordinator);
    if (stored?.sharedFilesInAcks !== true) return stored;
    const { sharedFilesInAcks: _s, ...item } = stored;
    const inFlight = item.state.inFlight;
    if (inFlight === undefined || inFlight === null || inFlight.acknowledged.length === 0) return item;
    const byTask = new Map<string, TaskStateHandle['sharedFiles']>();
    for (const ack of await this.acks(inFlight.checkpointId)) {
      if (ack.kind !== 'ack') continue;
      for (const h of ack.handles) if (h.sharedFiles !== undefined) byTask.set(`${h.task.vertex}/${h.task.subtask}`, h.sharedFiles);
    }
    const acknowledged = inFlight.acknowledged.map((h) => {
      const files = byTask.get(`${h.task.vertex}/${h.task.subtask}`);
      return files === undefined ? h : { ...h, sharedFiles: files };
    });
    return { ...item, state: { ...item.state, inFlight: { ...inFlight, acknowledged } } };
  }

  /**
   * The item as stored: the in-flight handles without `sharedFiles` (kept by the ack items the handles came from),
   * so the item stays far below DynamoDB's 400 KB with large incremental chains.
   */
  static compact(item: CoordinatorItem): CoordinatorItem {
    const inFlight = item.state.inFlight;
    if (inFlight === undefined || inFlight === null || !inFlight.acknowledged.some((h) => h.sharedFiles !== undefined)) return item;
    const acknowledged = inFlight.acknowledged.map(({ sharedFiles: _f, ...h }) => h);
    return { ...item, sharedFilesInAcks: true, state: { ...item.state, inFlight: { ...inFlight, acknowledged } } };
  }

  /**
   * Writes the coordinator item as `execution`'s, replacing version `expectedVersion` (undefined: no item yet).
   * With `claim`, another execution's item is taken over (the newest supervisor execution owns the job); without,
   * the write also requires `execution` to own it. A lost race ends in CoordinatorSupersededError when another
   * execution owns the item now, else in a retriable ClusterControlError (a duplicate invocation got there first).
   */
  async writeCoordinator(item: CoordinatorItem, expectedVersion: number | undefined, options: { claim?: boolean } = {}): Promise<CoordinatorItem> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    let condition = 'attribute_not_exists(#pk)';
    if (expectedVersion === undefined) {
      names['#pk'] = PK;
    } else {
      names['#version'] = 'version';
      values[':version'] = { N: String(expectedVersion) };
      condition = '#version = :version';
      if (options.claim !== true) {
        names['#execution'] = 'execution';
        values[':execution'] = { S: item.execution };
        condition += ' AND #execution = :execution';
      }
    }
    const written: CoordinatorItem = { ...item, version: (expectedVersion ?? 0) + 1 };
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: { ...marshall(CoordinatorControlTable.compact(written), MARSHALL), ...this.key(ControlKeys.coordinator) },
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ...(Object.keys(values).length === 0 ? {} : { ExpressionAttributeValues: values }),
        }),
      );
    } catch (cause) {
      if (!conditionFailed(cause)) throw new ClusterControlError(`could not write ${this.where(ControlKeys.coordinator)}`, { cause });
      const now = await this.readCoordinator();
      if (now !== undefined && now.execution !== item.execution && options.claim !== true) {
        throw new CoordinatorSupersededError(item.execution, now.execution);
      }
      throw new ClusterControlError(
        `${this.where(ControlKeys.coordinator)} changed under execution ${item.execution} (version ${String(expectedVersion)} expected, ` +
          `${String(now?.version)} found): another invocation wrote it first; retry`,
        { cause },
      );
    }
    return written;
  }

  /**
   * Sets `control.trigger` when no trigger of this id or a newer one is there and the previous completed
   * checkpoint's sinks are committed (`sinkCommittedThrough >= completed.checkpointId`), recording the lease
   * generation it is conditioned on: a take-over between the read and this write refuses it (retry with the new value).
   */
  async setTrigger(trigger: ControlTrigger): Promise<SetTriggerResult | 'generationMoved'> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.key(ControlKeys.control),
          UpdateExpression: 'SET #trigger = :trigger, #gen = if_not_exists(#gen, :zero), #sct = if_not_exists(#sct, :zero)',
          ConditionExpression:
            '(attribute_not_exists(#trigger) OR #trigger.checkpointId < :id) AND ' +
            '(attribute_not_exists(#completed) OR #sct >= #completed.checkpointId) AND ' +
            '(#gen = :gen OR (attribute_not_exists(#gen) AND :gen = :zero))',
          ExpressionAttributeNames: { '#trigger': 'trigger', '#completed': 'completed', '#sct': 'sinkCommittedThrough', '#gen': 'leaseGeneration' },
          ExpressionAttributeValues: {
            ':trigger': { M: marshall(trigger, MARSHALL) },
            ':id': { N: String(trigger.checkpointId) },
            ':gen': { N: String(trigger.leaseGeneration) },
            ':zero': { N: '0' },
          },
        }),
      );
      return 'written';
    } catch (cause) {
      if (!conditionFailed(cause)) throw new ClusterControlError(`could not set the trigger in ${this.where(ControlKeys.control)}`, { cause });
    }
    const control = await this.readControl();
    if ((control.trigger?.checkpointId ?? -1) >= trigger.checkpointId) return 'present';
    if (control.completed !== undefined && control.sinkCommittedThrough < control.completed.checkpointId) return 'sinksPending';
    return 'generationMoved';
  }

  /** Moves `control.completed` forward to `checkpointId` (never back). */
  async setCompleted(checkpointId: number, metadataPath: string): Promise<void> {
    await this.advance('completed', { checkpointId, metadataPath }, '#field.checkpointId < :id', checkpointId);
  }

  /** Moves `control.sinkCommittedThrough` forward (never back). */
  async setSinkCommittedThrough(checkpointId: number): Promise<void> {
    await this.advance('sinkCommittedThrough', checkpointId, '#field < :id', checkpointId);
  }

  /** Records the stop: workers stop every slot and release its lease. */
  async setHalted(checkpointId: number, savepointPath: string): Promise<void> {
    await this.advance('halted', { checkpointId, savepointPath }, '#field.checkpointId < :id', checkpointId);
  }

  private async advance(field: string, value: unknown, newer: string, checkpointId: number): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.key(ControlKeys.control),
          // Defaults for the counters workers read, except the one being set (two paths may not overlap).
          UpdateExpression: `SET #field = :value, #gen = if_not_exists(#gen, :zero)${field === 'sinkCommittedThrough' ? '' : ', #sct = if_not_exists(#sct, :zero)'}`,
          ConditionExpression: `attribute_not_exists(#field) OR ${newer}`,
          ExpressionAttributeNames: { '#field': field, '#gen': 'leaseGeneration', ...(field === 'sinkCommittedThrough' ? {} : { '#sct': 'sinkCommittedThrough' }) },
          ExpressionAttributeValues: {
            ':value': marshall({ v: value }, MARSHALL)['v'] as AttributeValue,
            ':id': { N: String(checkpointId) },
            ':zero': { N: '0' },
          },
        }),
      );
    } catch (cause) {
      // Already there or further: a repeated write of an idempotent step.
      if (conditionFailed(cause)) return;
      throw new ClusterControlError(`could not set ${field} in ${this.where(ControlKeys.control)}`, { cause });
    }
  }

  /** The ConditionCheck of a metadata commit: `control.leaseGeneration` is still the trigger's. */
  leaseGenerationCheck(leaseGeneration: number): TransactWriteItem {
    return {
      ConditionCheck: {
        TableName: this.table,
        Key: this.key(ControlKeys.control),
        ConditionExpression: leaseGeneration === 0 ? '#gen = :gen OR attribute_not_exists(#gen)' : '#gen = :gen',
        ExpressionAttributeNames: { '#gen': 'leaseGeneration' },
        ExpressionAttributeValues: { ':gen': { N: String(leaseGeneration) } },
      },
    };
  }

  /**
   * The control half of a checkpoint's metadata commit: sets `control.completed` to it, conditioned on
   * `control.leaseGeneration` still being the trigger's and on no newer checkpoint being completed. In the same
   * transaction as the commit record, so "committed" and "what a starting slot restores" are one atomic step: a
   * take-over either precedes the commit (refusing it) or reads the new `completed`.
   */
  completeOnGeneration(leaseGeneration: number, checkpointId: number, metadataPath: string, slotEpochs?: readonly number[]): TransactWriteItem {
    const generation = leaseGeneration === 0 ? '(#gen = :gen OR attribute_not_exists(#gen))' : '#gen = :gen';
    return {
      Update: {
        TableName: this.table,
        Key: this.key(ControlKeys.control),
        UpdateExpression: 'SET #completed = :completed, #sct = if_not_exists(#sct, :zero)',
        ConditionExpression: `${generation} AND (attribute_not_exists(#completed) OR #completed.checkpointId < :id)`,
        ExpressionAttributeNames: { '#gen': 'leaseGeneration', '#completed': 'completed', '#sct': 'sinkCommittedThrough' },
        ExpressionAttributeValues: {
          ':gen': { N: String(leaseGeneration) },
          ':id': { N: String(checkpointId) },
          ':zero': { N: '0' },
          ':completed': { M: marshall({ checkpointId, metadataPath, ...(slotEpochs === undefined ? {} : { slotEpochs }) }, MARSHALL) },
        },
      },
    };
  }

  /** Every `ack#<checkpointId>#` item (acks and declines), slot order. */
  acks(checkpointId: number): Promise<AckItem[]> {
    return this.query<AckItem>(ControlKeys.ackPrefix(checkpointId));
  }

  /**
   * Deletes the ack (and decline) items of `checkpointId` and every earlier checkpoint, once it ended (completed or
   * aborted; one checkpoint is in flight at a time, so every earlier one ended too): nothing reads them any more,
   * and without this they pile up (P a checkpoint, forever). A late ack put after an abort goes at the next end.
   */
  async deleteAcksThrough(checkpointId: number): Promise<number> {
    const acks = await this.query<AckItem>('ack#', `${ControlKeys.ackPrefix(checkpointId)}~`);
    try {
      await Promise.all(
        acks.map((a) => this.client.send(new DeleteItemCommand({ TableName: this.table, Key: this.key(ControlKeys.ack(a.checkpointId, a.slot)) }))),
      );
    } catch (cause) {
      throw new ClusterControlError(`could not delete the ack items of checkpoint ${checkpointId} in ${this.where(ControlKeys.ackPrefix(checkpointId))}`, { cause });
    }
    return acks.length;
  }

  requests(): Promise<RequestItem[]> {
    return this.query<RequestItem>(ControlKeys.requestPrefix);
  }

  /**
   * Deletes an answered (succeeded or failed) request item last updated before `answeredBefore`; true when it went.
   * Conditioned on both, so a request still queued or running, or answered since, is never deleted.
   */
  async deleteAnsweredRequest(id: string, answeredBefore: number): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: this.key(ControlKeys.request(id)),
          ConditionExpression: '#status IN (:succeeded, :failed) AND #updatedAt < :before',
          ExpressionAttributeNames: { '#status': 'status', '#updatedAt': 'updatedAt' },
          ExpressionAttributeValues: { ':succeeded': { S: 'succeeded' }, ':failed': { S: 'failed' }, ':before': { N: String(answeredBefore) } },
        }),
      );
      return true;
    } catch (cause) {
      if (awsErrorName(cause) === 'ConditionalCheckFailedException') return false;
      throw new ClusterControlError(`could not delete the answered request item ${this.where(ControlKeys.request(id))}`, { cause });
    }
  }

  /** The items whose sort key begins with `prefix`, or with `through`: from `prefix` up to `through` included. */
  private async query<T>(prefix: string, through?: string): Promise<T[]> {
    const found: T[] = [];
    try {
      const pages = paginateQuery(
        { client: this.client },
        {
          TableName: this.table,
          KeyConditionExpression: through === undefined ? '#pk = :pk AND begins_with(#sk, :prefix)' : '#pk = :pk AND #sk BETWEEN :prefix AND :through',
          ExpressionAttributeNames: { '#pk': PK, '#sk': SK },
          ExpressionAttributeValues: { ':pk': { S: this.partition }, ':prefix': { S: prefix }, ...(through === undefined ? {} : { ':through': { S: through } }) },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const { [PK]: _pk, [SK]: _sk, ...rest } = unmarshall(item);
          found.push(rest as T);
        }
      }
    } catch (cause) {
      throw new ClusterControlError(`could not list the ${prefix}… items of ${this.where(prefix)}`, { cause });
    }
    return found;
  }

  /**
   * Moves a request to `status` (with its result or error) unless it already reached a final status: a repeated
   * outcome changes nothing. Returns whether it was written.
   */
  async updateRequest(id: string, update: Pick<RequestItem, 'status'> & Partial<Pick<RequestItem, 'result' | 'error'>>, now: number): Promise<boolean> {
    const sets = ['#status = :status', '#updatedAt = :now'];
    const names: Record<string, string> = { '#status': 'status', '#updatedAt': 'updatedAt', '#id': 'id' };
    const values: Record<string, AttributeValue> = {
      ':status': { S: update.status },
      ':now': { N: String(now) },
      ':succeeded': { S: 'succeeded' },
      ':failed': { S: 'failed' },
    };
    if (update.result !== undefined) {
      sets.push('#result = :result');
      names['#result'] = 'result';
      values[':result'] = { M: marshall(update.result, MARSHALL) };
    }
    if (update.error !== undefined) {
      sets.push('#error = :error');
      names['#error'] = 'error';
      values[':error'] = { S: update.error };
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.key(ControlKeys.request(id)),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'attribute_exists(#id) AND #status <> :succeeded AND #status <> :failed',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (cause) {
      if (conditionFailed(cause)) return false;
      throw new ClusterControlError(`could not update ${this.where(ControlKeys.request(id))}`, { cause });
    }
  }
}
