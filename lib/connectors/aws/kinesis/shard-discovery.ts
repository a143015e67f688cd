import { alignedSubSplit, type AlignedKeyGroups } from './aligned-sub-split.ts';
import type { listAllShards } from './list-shards.ts';
import type { ShardState } from './shard-state.ts';
import { shardSplit, splitsFromListing, type KinesisShardSplit, type ShardPosition } from './shard-split.ts';

/** A ListShards answer, every page. */
export type ShardListing = Awaited<ReturnType<typeof listAllShards>>;

/** Unaligned: children of this reader's shards that it does not read yet (a child has its first parent's owner). */
export function newChildSplits(listing: ShardListing, shards: ReadonlyMap<string, ShardState<unknown>>): KinesisShardSplit[] {
  const found: KinesisShardSplit[] = [];
  // A child found in this listing is read by this reader too: its own children (listed after it) are claimed now.
  const added = new Map<string, KinesisShardSplit>();
  for (const shard of listing) {
    const id = shard.ShardId;
    if (id === undefined || shards.has(id) || added.has(id) || shard.ParentShardId === undefined) continue;
    const parent = shards.get(shard.ParentShardId)?.split ?? added.get(shard.ParentShardId);
    if (parent === undefined) continue;
    const split = shardSplit(shard, parent.rootShardId, { type: 'TRIM_HORIZON' });
    found.push(split);
    added.set(id, split);
  }
  return found;
}

/**
 * Aligned: a sub-split of every listed shard that overlaps the slot's key groups and has none yet, starting at
 * `start` (the source's start position in the first listing; TRIM_HORIZON for children of a later reshard).
 */
export function newAlignedSplits(listing: ShardListing, readShards: ReadonlySet<string>, aligned: AlignedKeyGroups, start: ShardPosition): KinesisShardSplit[] {
  const found: KinesisShardSplit[] = [];
  for (const split of splitsFromListing(listing, start)) {
    if (readShards.has(split.id)) continue;
    const sub = alignedSubSplit(split, aligned);
    if (sub !== undefined) found.push(sub);
  }
  return found;
}
