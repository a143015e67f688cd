import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { AttributeMap, StagedItem, StagedWrite } from './staged-writes.ts';

/** Writes committed together: one TransactWriteItems call (plus the commit marker) in 'transactional' mode. */
export interface DynamoDbChunk {
  /**
   * Chunks of one generation touch distinct items and may be committed in any order; a generation starts only
   * after the one before it is committed (it holds later writes to the same items).
   */
  readonly generation: number;
  readonly items: readonly TransactWriteItem[];
}

export interface ChunkLimits {
  /** Writes per chunk, the commit marker not counted. */
  readonly maxItems: number;
  /** Estimated bytes per chunk. */
  readonly maxBytes: number;
}

/** DynamoDB's size of an attribute value, close enough for staying under the 4 MB transaction limit. */
function attributeSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) return Math.ceil(value.N.length / 2) + 1;
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
  if (value.NS !== undefined) return value.NS.reduce((n, s) => n + Math.ceil(s.length / 2) + 1, 0);
  if (value.BS !== undefined) return value.BS.reduce((n, b) => n + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((n, v) => n + 1 + attributeSize(v), 0);
  if (value.M !== undefined) return 3 + mapSize(value.M);
  return 0;
}

function mapSize(map: AttributeMap): number {
  let size = 0;
  for (const name in map) size += Buffer.byteLength(name, 'utf8') + attributeSize(map[name] as AttributeValue);
  return size;
}

/** Estimated size of one transaction item. */
function transactItemSize(item: TransactWriteItem): number {
  if (item.Put?.Item !== undefined) return mapSize(item.Put.Item);
  if (item.Delete?.Key !== undefined) return mapSize(item.Delete.Key);
  if (item.Update !== undefined) {
    return (
      mapSize(item.Update.Key ?? {}) +
      mapSize(item.Update.ExpressionAttributeValues ?? {}) +
      Buffer.byteLength(item.Update.UpdateExpression ?? '', 'utf8') +
      Object.values(item.Update.ExpressionAttributeNames ?? {}).reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0)
    );
  }
  return 0;
}

/** One staged write as a transaction item; undefined for an update that changes nothing. */
export function toTransactItem(table: string, key: AttributeMap, write: StagedWrite): TransactWriteItem | undefined {
  if (write.kind === 'put') return { Put: { TableName: table, Item: write.item } };
  if (write.kind === 'delete') return { Delete: { TableName: table, Key: key } };
  if (write.actions.size === 0) return undefined;
  const names: Record<string, string> = {};
  const values: AttributeMap = {};
  const set: string[] = [];
  const add: string[] = [];
  const remove: string[] = [];
  let i = 0;
  for (const [name, action] of write.actions) {
    const n = `#a${i}`;
    const v = `:v${i}`;
    i++;
    names[n] = name;
    if (action.op === 'remove') remove.push(n);
    else {
      values[v] = action.value;
      (action.op === 'set' ? set : add).push(action.op === 'set' ? `${n} = ${v}` : `${n} ${v}`);
    }
  }
  const clauses = [
    set.length > 0 ? `SET ${set.join(', ')}` : '',
    add.length > 0 ? `ADD ${add.join(', ')}` : '',
    remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
  ].filter((c) => c !== '');
  return {
    Update: {
      TableName: table,
      Key: key,
      UpdateExpression: clauses.join(' '),
      ExpressionAttributeNames: names,
      ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
    },
  };
}

/**
 * Cuts staged writes into chunks: generation g holds each item's g-th write, so later writes to an item commit after
 * earlier ones and no chunk touches an item twice (TransactWriteItems forbids that). Chunks respect `limits`; a
 * single write larger than `maxBytes` gets a chunk of its own (DynamoDB then judges it).
 */
export function toChunks(table: string, staged: readonly StagedItem[], limits: ChunkLimits): DynamoDbChunk[] {
  const chunks: DynamoDbChunk[] = [];
  for (let generation = 0; ; generation++) {
    let any = false;
    let items: TransactWriteItem[] = [];
    let bytes = 0;
    for (const entry of staged) {
      const write = entry.writes[generation];
      if (write === undefined) continue;
      any = true;
      const item = toTransactItem(table, entry.key, write);
      if (item === undefined) continue;
      const size = transactItemSize(item);
      if (items.length > 0 && (items.length >= limits.maxItems || bytes + size > limits.maxBytes)) {
        chunks.push({ generation, items });
        items = [];
        bytes = 0;
      }
      items.push(item);
      bytes += size;
    }
    if (items.length > 0) chunks.push({ generation, items });
    if (!any) return chunks;
  }
}
