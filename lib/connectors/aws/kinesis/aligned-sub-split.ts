import type { _Record } from '@aws-sdk/client-kinesis';
import {
  ConfigError,
  compareHashWords,
  hashKeyWords,
  keyGroupOfHashKey,
  keyGroupOfHashWords,
  kinesisHashWords,
  type KeyGroupRange,
} from '../../../core/index.ts';
import type { SourceReaderContext } from '../../source.ts';
import type { KinesisShardSplit } from './shard-split.ts';

/**
 * Aligned reading (docs/cluster.md, "Aligned data path"): a cluster slot owns an inclusive range of kinesis-hash
 * key groups, and reads every shard whose hash-key range overlaps it as a sub-split: (shard x the key groups of
 * the shard that are the slot's), with its own position. Key groups cut the hash space into equal contiguous
 * ranges, shards into other contiguous ranges, so the overlap is one contiguous key-group range, and a slot has at
 * most one sub-split per shard.
 */

/** The slot's key groups, as SourceReaderContext.alignedKeyGroups gives them. */
export type AlignedKeyGroups = NonNullable<SourceReaderContext['alignedKeyGroups']>;

/** Refuses a slot range that is not a non-empty range of key groups of its maxParallelism (ConfigError). */
export function checkAlignedKeyGroups(slot: AlignedKeyGroups | undefined, source: string): void {
  if (slot === undefined) return;
  const { start, end, maxParallelism: m } = slot;
  const ok = Number.isSafeInteger(m) && m >= 1 && Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && start <= end && end < m;
  if (!ok) {
    throw new ConfigError(`${source}: alignedKeyGroups [${start}, ${end}] is not a key-group range of maxParallelism ${m}`);
  }
}

/** The shard an (aligned or whole-shard) split reads. */
export function shardIdOf(split: KinesisShardSplit): string {
  return split.shardId ?? split.id;
}

/** Key groups that a shard's hash-key range touches. */
function shardKeyGroups(split: KinesisShardSplit, maxParallelism: number): KeyGroupRange {
  return {
    start: keyGroupOfHashKey(BigInt(split.hashKeyRange.startingHashKey), maxParallelism),
    end: keyGroupOfHashKey(BigInt(split.hashKeyRange.endingHashKey), maxParallelism),
  };
}

/**
 * The slot's part of a split, its position kept: a whole shard, or a sub-split of a slot of another layout (a
 * restore at another parallelism), cut to the key groups that are the slot's; undefined when none is. A sub-split
 * of this slot is returned as it is. Cutting never skips a record: a record of the slot's key groups lies after the
 * split's position in the shard, whichever slot's part the split was.
 */
export function alignedSubSplit(split: KinesisShardSplit, slot: AlignedKeyGroups): KinesisShardSplit | undefined {
  const shardId = shardIdOf(split);
  const from = split.keyGroups ?? shardKeyGroups(split, slot.maxParallelism);
  const start = Math.max(from.start, slot.start);
  const end = Math.min(from.end, slot.end);
  if (start > end) return undefined;
  if (split.keyGroups !== undefined && start === split.keyGroups.start && end === split.keyGroups.end) return split;
  return { ...split, id: `${shardId}@kg${start}-${end}`, shardId, keyGroups: { start, end } };
}

/**
 * What the reader does with a fetched record of an aligned sub-split. `keep`: its key group is the sub-split's.
 * `skip`: another slot's key group, that slot keeps it. `foreign`: MD5 of its partition key lies outside the
 * shard (it was put with an ExplicitHashKey), so no slot can keep it aligned; exactly one slot, the one owning the
 * shard's first key group, sends it to the dead letters, the others skip it.
 */
export type RecordFate = 'keep' | 'skip' | 'foreign';

/** Decides each record's fate for one sub-split: one MD5 per record, no allocation. */
export type AlignedRecordFilter = (record: _Record) => RecordFate;

export function alignedRecordFilter(split: KinesisShardSplit, maxParallelism: number): AlignedRecordFilter {
  const keyGroups = split.keyGroups;
  if (keyGroups === undefined) return () => 'keep';
  const first = hashKeyWords(BigInt(split.hashKeyRange.startingHashKey));
  const last = hashKeyWords(BigInt(split.hashKeyRange.endingHashKey));
  const ownsForeign = keyGroups.start === shardKeyGroups(split, maxParallelism).start;
  const { start, end } = keyGroups;
  const words = new Uint32Array(4);
  return (record) => {
    kinesisHashWords(record.PartitionKey ?? '', words);
    if (compareHashWords(words, first) < 0 || compareHashWords(words, last) > 0) {
      return ownsForeign ? 'foreign' : 'skip';
    }
    const keyGroup = keyGroupOfHashWords(words, maxParallelism);
    return keyGroup >= start && keyGroup <= end ? 'keep' : 'skip';
  };
}

/** Why a record with a foreign hash key goes to the dead letters. */
export const FOREIGN_HASH_KEY_REASON =
  "the MD5 hash of its partition key lies outside its shard's hash-key range (it was put with an ExplicitHashKey): a keyBy with keyGroups 'kinesis-hash' cannot place it without a shuffle";
