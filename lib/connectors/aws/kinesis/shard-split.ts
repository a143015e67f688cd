import type { Shard } from '@aws-sdk/client-kinesis';
import { murmur3 } from '../../../core/index.ts';
import type { SourceSplit } from '../../source.ts';

/** Where reading a shard starts (or continues). Plain data: it is checkpointed. */
export type ShardPosition =
  | { readonly type: 'TRIM_HORIZON' }
  | { readonly type: 'LATEST' }
  /** Records that arrived at or after `timestamp` (epoch ms). */
  | { readonly type: 'AT_TIMESTAMP'; readonly timestamp: number }
  /** Continue after the record with this sequence number (the last one the job has read). */
  | { readonly type: 'AFTER_SEQUENCE_NUMBER'; readonly sequenceNumber: string };

/**
 * One shard of the stream, as a source split, or, when a cluster slot reads aligned key groups, the slot's part of
 * one shard (a sub-split). Plain data, checkpointed through `currentSplits`.
 */
export interface KinesisShardSplit extends SourceSplit {
  /** The shard id, e.g. `shardId-000000000003`; a sub-split's is `<shard id>@kg<start>-<end>`. */
  readonly id: string;
  /** Set on a sub-split: the shard it reads. @default `id` */
  readonly shardId?: string | undefined;
  /**
   * Set on a sub-split: the kinesis-hash key groups of the shard that are the slot's (inclusive); only records of
   * these key groups are returned.
   */
  readonly keyGroups?: { readonly start: number; readonly end: number } | undefined;
  readonly parentShardId?: string | undefined;
  /** Set on the child of a merge: the second merged shard. */
  readonly adjacentParentShardId?: string | undefined;
  /** Decimal strings, as Kinesis gives them (128-bit numbers). */
  readonly hashKeyRange: { readonly startingHashKey: string; readonly endingHashKey: string };
  /**
   * The first shard of this shard's first-parent lineage (its own id for a shard without a known parent). It fixes
   * the owner subtask: a child has its first parent's root, so it stays with the subtask that read the parent.
   */
  readonly rootShardId: string;
  /** Where reading continues: the start position until a record was read, then after its sequence number. */
  readonly position: ShardPosition;
  /** Read to its end (the shard is closed). Kept while a child may still wait for it, until it expires. */
  readonly finished: boolean;
}

/**
 * The subtask that reads every shard of `rootShardId`'s lineage. Kinesis numbers shards `shardId-<n>`, and a
 * stream's first shards are 0..count-1, so the number modulo the parallelism spreads them evenly (a hash of so
 * few ids would not); other ids are hashed.
 */
export function ownerOfRoot(rootShardId: string, parallelism: number): number {
  const numbered = /^shardId-(\d{1,15})$/.exec(rootShardId);
  if (numbered !== null) return Number(numbered[1]) % parallelism;
  return murmur3(rootShardId) % parallelism;
}

export function shardSplit(shard: Shard, rootShardId: string, position: ShardPosition): KinesisShardSplit {
  return {
    id: shard.ShardId as string,
    parentShardId: shard.ParentShardId,
    adjacentParentShardId: shard.AdjacentParentShardId,
    hashKeyRange: {
      startingHashKey: shard.HashKeyRange?.StartingHashKey ?? '0',
      endingHashKey: shard.HashKeyRange?.EndingHashKey ?? '0',
    },
    rootShardId,
    position,
    finished: false,
  };
}

/**
 * The splits of a full shard listing, all starting at `start` (a child is still read only after its parents).
 * Roots follow first parents as far as the listing goes; a shard whose parent has expired is its own root.
 */
export function splitsFromListing(shards: readonly Shard[], start: ShardPosition): KinesisShardSplit[] {
  const byId = new Map<string, Shard>();
  for (const s of shards) if (s.ShardId !== undefined) byId.set(s.ShardId, s);
  const roots = new Map<string, string>();
  const rootOf = (id: string): string => {
    const known = roots.get(id);
    if (known !== undefined) return known;
    // Iterative walk: lineages of long-lived streams can be deep.
    const chain: string[] = [];
    let current = id;
    for (;;) {
      const cached = roots.get(current);
      if (cached !== undefined) {
        current = cached;
        break;
      }
      chain.push(current);
      const parent = byId.get(current)?.ParentShardId;
      if (parent === undefined || !byId.has(parent) || chain.includes(parent)) break;
      current = parent;
    }
    const root = roots.get(current) ?? current;
    for (const c of chain) roots.set(c, root);
    return root;
  };
  return [...byId.values()].map((s) => shardSplit(s, rootOf(s.ShardId as string), start));
}
