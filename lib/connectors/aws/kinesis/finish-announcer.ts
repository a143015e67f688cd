import type { FinishedShardRegistry } from './finished-shard-registry.ts';

/**
 * Decides when this reader's finished shards may be announced to the other readers: once a completed checkpoint
 * holds them as finished (their last records are then before that checkpoint's barrier everywhere downstream),
 * or at once when the job takes no checkpoints.
 */
export class FinishAnnouncer {
  private readonly unannounced = new Set<string>();
  /** Per checkpoint id: the finished shards its `currentSplits` held. */
  private readonly byCheckpoint = new Map<number, string[]>();

  constructor(
    private readonly registry: FinishedShardRegistry,
    private readonly checkpointing: boolean,
  ) {}

  /** Shards restored as finished are in a completed checkpoint by definition. */
  async restored(shardIds: readonly string[]): Promise<void> {
    if (shardIds.length > 0) await this.registry.announce(shardIds);
  }

  async finished(shardId: string): Promise<void> {
    if (!this.checkpointing) await this.registry.announce([shardId]);
    else this.unannounced.add(shardId);
  }

  /** `currentSplits(checkpointId)` was taken: its finished shards go out when that checkpoint completes. */
  checkpointTaken(checkpointId: number): void {
    if (this.unannounced.size > 0) this.byCheckpoint.set(checkpointId, [...this.unannounced]);
  }

  async checkpointComplete(checkpointId: number): Promise<void> {
    const ready: string[] = [];
    for (const [id, shards] of this.byCheckpoint) {
      if (id > checkpointId) continue;
      this.byCheckpoint.delete(id);
      for (const shard of shards) {
        if (this.unannounced.delete(shard)) ready.push(shard);
      }
    }
    if (ready.length > 0) await this.registry.announce(ready);
  }
}
