import type { AttributeValue, DeleteItemCommandInput, PutItemCommandInput, TransactWriteItem, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * Upsert writes conditioned on the checkpoint that wrote each item, for commits that can arrive late: under the
 * cluster coordinator a timed-out or duplicate CommitSinks invocation of checkpoint N may still be writing after
 * N+1 was committed, and nothing commits N+1 again. Each write stores the checkpoint id in `attribute` and applies
 * only when the item holds no id or one not newer (`attribute_not_exists(#ckpt) OR #ckpt <= :n`), so a late write
 * of N leaves N+1's value alone, while a repeat of N's own commit rewrites the same values.
 *
 * A delete removes the attribute with the item: a late put of N after N+1 deleted the item writes it again. Sinks
 * that delete under the cluster coordinator should use `mode: 'transactional'`.
 */
export type ConditionedWrite =
  | { readonly kind: 'put'; readonly input: PutItemCommandInput }
  | { readonly kind: 'delete'; readonly input: DeleteItemCommandInput }
  | { readonly kind: 'update'; readonly input: UpdateItemCommandInput };

const NAME = '#sluiceCkpt';
const VALUE = ':sluiceCkpt';
const CONDITION = `(attribute_not_exists(${NAME}) OR ${NAME} <= ${VALUE})`;

/** The checkpoint id of a committable's transaction name (`.../c<id>`); undefined for a flush (`.../f<n>`). */
export function checkpointIdOfTxn(txn: string): number | undefined {
  const m = /\/c(\d{1,15})$/.exec(txn);
  return m === null ? undefined : Number(m[1]);
}

function and(existing: string | undefined): string {
  return existing === undefined || existing === '' ? CONDITION : `(${existing}) AND ${CONDITION}`;
}

/** Adds `#ckpt = :n` to an update expression's SET clause (or a SET clause in front when it has none). */
function withCheckpointSet(expression: string): string {
  const set = /(^|\s)SET\s/i.exec(expression);
  if (set === null) return `SET ${NAME} = ${VALUE} ${expression}`.trim();
  const at = set.index + set[0].length;
  return `${expression.slice(0, at)}${NAME} = ${VALUE}, ${expression.slice(at)}`;
}

/** One staged write of an upsert chunk as a single conditioned request; undefined for a ConditionCheck. */
export function conditionedWrite(item: TransactWriteItem, attribute: string, checkpointId: number): ConditionedWrite | undefined {
  const value: AttributeValue = { N: String(checkpointId) };
  if (item.Put !== undefined) {
    const { Put: put } = item;
    return {
      kind: 'put',
      input: {
        TableName: put.TableName,
        Item: { ...put.Item, [attribute]: value },
        ConditionExpression: and(put.ConditionExpression),
        ExpressionAttributeNames: { ...put.ExpressionAttributeNames, [NAME]: attribute },
        ExpressionAttributeValues: { ...put.ExpressionAttributeValues, [VALUE]: value },
      },
    };
  }
  if (item.Delete !== undefined) {
    const { Delete: del } = item;
    return {
      kind: 'delete',
      input: {
        TableName: del.TableName,
        Key: del.Key,
        ConditionExpression: and(del.ConditionExpression),
        ExpressionAttributeNames: { ...del.ExpressionAttributeNames, [NAME]: attribute },
        ExpressionAttributeValues: { ...del.ExpressionAttributeValues, [VALUE]: value },
      },
    };
  }
  if (item.Update !== undefined) {
    const { Update: update } = item;
    return {
      kind: 'update',
      input: {
        TableName: update.TableName,
        Key: update.Key,
        UpdateExpression: withCheckpointSet(update.UpdateExpression ?? ''),
        ConditionExpression: and(update.ConditionExpression),
        ExpressionAttributeNames: { ...update.ExpressionAttributeNames, [NAME]: attribute },
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, [VALUE]: value },
      },
    };
  }
  return undefined;
}
