import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  paginateQuery,
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { InternalError } from '../../../core/index.ts';
import { CheckpointIoError } from '../../../storage/errors.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import type { CheckpointCommitPoint, CommitRecord } from './commit-point.ts';
import type { S3Objects } from './s3-objects.ts';

/** Key schema of the commit table: one partition per storage location, one item per checkpoint id. */
export const COMMIT_TABLE_PARTITION_KEY = 'location';
export const COMMIT_TABLE_SORT_KEY = 'checkpointId';

function isConditionFailed(error: unknown): boolean {
  return awsErrorName(error) === 'ConditionalCheckFailedException';
}

function recordOf(item: Record<string, AttributeValue> | undefined): (CommitRecord & { id: number }) | undefined {
  const id = Number(item?.[COMMIT_TABLE_SORT_KEY]?.N);
  const metadataPath = item?.['metadataPath']?.S;
  const sha256 = item?.['sha256']?.S;
  const bytes = Number(item?.['bytes']?.N);
  if (!Number.isSafeInteger(id) || metadataPath === undefined || sha256 === undefined || !Number.isSafeInteger(bytes)) {
    return undefined;
  }
  return { id, metadataPath, sha256, bytes };
}

/**
 * Commits through a DynamoDB item `(location, checkpointId) -> metadata path, sha256, size`, put on the condition
 * that it does not exist, and only then the metadata object. Of two writers committing one id, exactly one wins the
 * condition and writes the object; the other is refused before touching S3. Readers trust a metadata object only
 * when its item exists and its sha256 matches.
 */
export class DynamoDbCommitPoint implements CheckpointCommitPoint {
  readonly mode = 'dynamodb' as const;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly objects: S3Objects,
  ) {}

  private get partition(): string {
    return this.objects.url();
  }

  private where(checkpointId?: number): string {
    return `DynamoDB table ${this.table}, item ${this.partition}${checkpointId === undefined ? '' : ` #${checkpointId}`}`;
  }

  private keyOf(checkpointId: number): Record<string, AttributeValue> {
    return { [COMMIT_TABLE_PARTITION_KEY]: { S: this.partition }, [COMMIT_TABLE_SORT_KEY]: { N: String(checkpointId) } };
  }

  async commit(checkpointId: number, metadataPath: string, bytes: Uint8Array, sha256: string): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: this.recordItem(checkpointId, metadataPath, bytes, sha256),
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': COMMIT_TABLE_PARTITION_KEY },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw new CheckpointIoError(`commit checkpoint ${checkpointId} in`, this.where(checkpointId), error);
      // Ours from an earlier try whose metadata upload failed may be finished; anyone else's is refused.
      const existing = await this.read(checkpointId);
      if (existing?.sha256 !== sha256 || existing.metadataPath !== metadataPath) {
        throw new InternalError(
          `checkpoint ${checkpointId} in ${this.objects.url()} is already committed (${this.where(checkpointId)}); checkpoint ids must be new`,
        );
      }
    }
    try {
      await this.objects.putBytes(metadataPath, bytes, sha256);
    } catch (cause) {
      throw new CheckpointIoError(`write the metadata of checkpoint ${checkpointId} to`, this.objects.url(metadataPath), cause);
    }
  }

  /**
   * A commit that also depends on other items (the cluster coordinator's lease generation): the metadata object
   * first (the same bytes on every retry), then ONE transaction [Put the commit record if absent, ...`conditions`].
   * `refused` when one of `conditions` failed (nothing is committed; the object stays an incomplete checkpoint's).
   * A record already there with these bytes (an earlier try of this commit) is `committed`, whatever the conditions
   * say now; another commit's record is an InternalError, as in `commit`.
   */
  async commitConditioned(
    checkpointId: number,
    metadataPath: string,
    bytes: Uint8Array,
    sha256: string,
    conditions: readonly TransactWriteItem[],
  ): Promise<'committed' | 'refused'> {
    try {
      await this.objects.putBytes(metadataPath, bytes, sha256);
    } catch (cause) {
      throw new CheckpointIoError(`write the metadata of checkpoint ${checkpointId} to`, this.objects.url(metadataPath), cause);
    }
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: this.recordItem(checkpointId, metadataPath, bytes, sha256),
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': COMMIT_TABLE_PARTITION_KEY },
              },
            },
            ...conditions,
          ],
        }),
      );
      return 'committed';
    } catch (error) {
      if (awsErrorName(error) !== 'TransactionCanceledException') {
        throw new CheckpointIoError(`commit checkpoint ${checkpointId} in`, this.where(checkpointId), error);
      }
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed') {
        const existing = await this.read(checkpointId);
        if (existing?.sha256 === sha256 && existing.metadataPath === metadataPath) return 'committed';
        throw new InternalError(
          `checkpoint ${checkpointId} in ${this.objects.url()} is already committed (${this.where(checkpointId)}); checkpoint ids must be new`,
        );
      }
      if (reasons.slice(1).some((r) => r.Code === 'ConditionalCheckFailed')) return 'refused';
      throw new CheckpointIoError(`commit checkpoint ${checkpointId} in`, this.where(checkpointId), error);
    }
  }

  private recordItem(checkpointId: number, metadataPath: string, bytes: Uint8Array, sha256: string): Record<string, AttributeValue> {
    return {
      ...this.keyOf(checkpointId),
      metadataPath: { S: metadataPath },
      sha256: { S: sha256 },
      bytes: { N: String(bytes.byteLength) },
      committedAt: { N: String(Date.now()) },
    };
  }

  async records(): Promise<ReadonlyMap<number, CommitRecord>> {
    const found = new Map<number, CommitRecord>();
    try {
      const pages = paginateQuery(
        { client: this.client },
        {
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': COMMIT_TABLE_PARTITION_KEY },
          ExpressionAttributeValues: { ':pk': { S: this.partition } },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const record = recordOf(item);
          if (record !== undefined) found.set(record.id, record);
        }
      }
    } catch (cause) {
      throw new CheckpointIoError('list checkpoint commits in', this.where(), cause);
    }
    return found;
  }

  async forget(checkpointId: number): Promise<void> {
    try {
      await this.client.send(new DeleteItemCommand({ TableName: this.table, Key: this.keyOf(checkpointId) }));
    } catch (cause) {
      throw new CheckpointIoError(`delete the commit of checkpoint ${checkpointId} from`, this.where(checkpointId), cause);
    }
  }

  private async read(checkpointId: number): Promise<CommitRecord | undefined> {
    try {
      const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: this.keyOf(checkpointId), ConsistentRead: true }));
      return recordOf(out.Item);
    } catch (cause) {
      throw new CheckpointIoError(`read the commit of checkpoint ${checkpointId} from`, this.where(checkpointId), cause);
    }
  }
}
