import type { FinishedShardRegistry } from './finished-shard-registry.ts';
import type { ShardState } from './shard-state.ts';

/** What the parents-first rule reads of its reader (live views: the reader adds and forgets shards). */
export interface ShardParentsView {
  /** The reader's shards by split id. */
  readonly shards: ReadonlyMap<string, ShardState<unknown>>;
  /** The reader's sub-splits by shard id (aligned reading). */
  readonly byShard: ReadonlyMap<string, readonly ShardState<unknown>[]>;
  /** Whether the reader reads a slot's kinesis-hash key groups. */
  readonly aligned: boolean;
  readonly registry: FinishedShardRegistry;
  /** Shard ids of the latest listing; undefined before the first. */
  listed(): ReadonlySet<string> | undefined;
  /** The registry could not be asked: the reader fails. */
  fail(error: unknown, shardId: string): void;
}

/**
 * Parents first, the rule that keeps per-key order across SplitShard and MergeShards: a child shard is read only
 * after its parents are finished. A parent of this reader once every record of it has been returned; a merge's
 * adjacent parent owned by another subtask once the registry says it is finished (announced after a completed
 * checkpoint) or it has expired from the listing. Registry answers that say finished are cached.
 */
export class ShardParents {
  private readonly finishedElsewhere = new Set<string>();
  private readonly registryChecks = new Set<string>();

  constructor(private readonly view: ShardParentsView) {}

  /** Whether `shard` may be read; once true it stays true (`shard.ready`). */
  isReady(shard: ShardState<unknown>): boolean {
    if (shard.ready) return true;
    if (this.view.aligned) return this.alignedReady(shard);
    const parent = shard.split.parentShardId;
    if (parent !== undefined) {
      // A first parent always has this shard's owner; absent from this reader, it has expired.
      const p = this.view.shards.get(parent);
      if (p !== undefined && !p.finished) return false;
    }
    const adjacent = shard.split.adjacentParentShardId;
    if (adjacent !== undefined && !this.adjacentFinished(adjacent)) return false;
    shard.ready = true;
    return true;
  }

  /**
   * Aligned: a child's records of this slot's key groups can only follow records of the same key groups in its
   * parents, that is this slot's sub-splits of them. So the child waits for those alone, whoever else reads the
   * parents: a parent this slot has no sub-split of holds none of its key groups (or has expired).
   */
  private alignedReady(shard: ShardState<unknown>): boolean {
    for (const parent of [shard.split.parentShardId, shard.split.adjacentParentShardId]) {
      if (parent === undefined) continue;
      const parts = this.view.byShard.get(parent);
      if (parts !== undefined && parts.some((p) => !p.finished)) return false;
    }
    shard.ready = true;
    return true;
  }

  private adjacentFinished(shardId: string): boolean {
    const local = this.view.shards.get(shardId);
    if (local !== undefined) return local.finished;
    if (this.finishedElsewhere.has(shardId)) return true;
    const listed = this.view.listed();
    if (listed !== undefined && !listed.has(shardId)) return true; // expired: nothing left to wait for
    const answer = this.view.registry.isFinished(shardId);
    if (typeof answer === 'boolean') {
      if (answer) this.finishedElsewhere.add(shardId);
      return answer;
    }
    if (!this.registryChecks.has(shardId)) {
      this.registryChecks.add(shardId);
      answer.then(
        (done) => {
          if (done) this.finishedElsewhere.add(shardId);
          this.registryChecks.delete(shardId);
        },
        (error: unknown) => this.view.fail(error, shardId),
      );
    }
    return false;
  }
}
