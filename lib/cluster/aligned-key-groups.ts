import { checkKey, kinesisKeyGroupOf, SluiceError, type Key, type KeyGroupRange } from '../core/index.ts';

/**
 * The aligned data path's safety check. Behind an aligned edge (a keyBy with `keyGroups: 'kinesis-hash'` right
 * after the Kinesis source) a slot reads exactly the records of its own key groups, so no record is routed. A key
 * whose key group lies outside the slot's range then means the key selector does not return the record's Kinesis
 * partition key (or the record was placed by an ExplicitHashKey the source did not catch): keeping it would put
 * its state in a slot that does not own it, so the slot fails, naming the key, the shard and the slot.
 */

/** A slot's own key groups on an aligned edge. */
export interface AlignedSlotKeyGroups {
  readonly slot: number;
  /** Inclusive key-group range of the slot (`keyGroupRangeForSubtask(slot, P, maxParallelism)`). */
  readonly range: KeyGroupRange;
  readonly maxParallelism: number;
}

/** A keyed record behind an aligned edge belongs to another slot's key groups. Not retriable: a restart reads it again. */
export class KeyGroupMismatchError extends SluiceError {
  readonly key: Key;
  readonly keyGroup: number;
  readonly shard: string | undefined;
  readonly slot: number;

  constructor(key: Key, keyGroup: number, shard: string | undefined, slots: AlignedSlotKeyGroups, operator: string | undefined) {
    const where = operator === undefined ? '' : `operator "${operator}": `;
    super(
      'KEY_GROUP_MISMATCH',
      `${where}key ${JSON.stringify(key)} from ${shard === undefined ? 'an unknown shard' : `shard ${shard}`} has kinesis-hash key group ${keyGroup}, ` +
        `outside slot ${slots.slot}'s key groups [${slots.range.start}, ${slots.range.end}] of ${slots.maxParallelism}: ` +
        "the keyBy with keyGroups 'kinesis-hash' must return the record's Kinesis partition key (records put with ExplicitHashKey cannot be aligned)",
      { retriable: false },
    );
    this.key = key;
    this.keyGroup = keyGroup;
    this.shard = shard;
    this.slot = slots.slot;
  }
}

/** Throws KeyGroupMismatchError unless `key`'s kinesis-hash key group is one of the slot's. */
export function checkAlignedKey(key: Key, shard: string | undefined, slots: AlignedSlotKeyGroups, operator?: string): void {
  const keyGroup = kinesisKeyGroupOf(key, slots.maxParallelism);
  if (keyGroup < slots.range.start || keyGroup > slots.range.end) {
    throw new KeyGroupMismatchError(key, keyGroup, shard, slots, operator);
  }
}

/**
 * Checks every record of a batch (one shard's records: the batch's split names it) with the edge's key
 * selector; one pass, no allocation. The runtime calls it on each batch that enters a keyed operator behind an
 * aligned edge. A key selector that throws or returns an invalid key fails as it would in routing.
 */
export function checkAlignedBatch<T>(
  values: readonly T[],
  keySelector: (value: T) => Key,
  shard: string | undefined,
  slots: AlignedSlotKeyGroups,
  operator?: string,
): void {
  const { start, end } = slots.range;
  const m = slots.maxParallelism;
  for (let i = 0; i < values.length; i++) {
    const key = checkKey(keySelector(values[i] as T));
    const keyGroup = kinesisKeyGroupOf(key, m);
    if (keyGroup < start || keyGroup > end) throw new KeyGroupMismatchError(key, keyGroup, shard, slots, operator);
  }
}

/**
 * The shard of an aligned source split id (`<shardId>@kg<start>-<end>`, as the Kinesis source names a slot's
 * sub-split), for messages; other ids are returned as they are.
 */
export function shardOfSplitId(splitId: string): string {
  const at = splitId.indexOf('@kg');
  return at < 0 ? splitId : splitId.slice(0, at);
}
