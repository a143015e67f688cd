import type { NativeAttributeValue } from '@aws-sdk/util-dynamodb';

/** Attributes as plain JavaScript values (strings, numbers, bigints, booleans, null, Uint8Array, arrays, objects, Sets). */
export type DynamoDbAttributes = Record<string, NativeAttributeValue>;

/**
 * One write of a record to the sink's table, by key. Attribute names are top-level names (no paths).
 * - `put` replaces the whole item (the item includes its key attributes);
 * - `update` changes attributes of the item, creating it when missing: `set` assigns, `add` adds a number to a
 *   number attribute or elements to a set (a missing attribute counts as 0 / the empty set), `remove` deletes
 *   attributes. Not allowed in 'upsert' mode: `add` (re-applying it after a recovery would count twice);
 * - `delete` removes the item.
 */
export type DynamoDbWrite =
  | { readonly type: 'put'; readonly item: DynamoDbAttributes }
  | {
      readonly type: 'update';
      readonly key: DynamoDbAttributes;
      readonly set?: DynamoDbAttributes;
      readonly add?: DynamoDbAttributes;
      readonly remove?: readonly string[];
    }
  | { readonly type: 'delete'; readonly key: DynamoDbAttributes };

/** The table's key attribute names. */
export interface DynamoDbKeySchema {
  readonly partitionKey: string;
  readonly sortKey?: string | undefined;
}
