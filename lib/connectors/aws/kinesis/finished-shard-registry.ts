import { BroadcastChannel } from 'node:worker_threads';

/**
 * Which shards are finished, shared by all readers of one job attempt. A reader announces a shard only once the
 * fact "finished" is in a completed checkpoint (or at once without checkpointing); the reader of a merged child
 * whose adjacent parent belongs to another subtask waits until that parent is announced. Reading the child any
 * earlier could let barrier alignment put the parent's last records behind the child's first ones.
 */
export interface FinishedShardRegistry {
  announce(shardIds: readonly string[]): void | Promise<void>;
  /** Whether some reader (this one included) announced `shardId`; may lag a moment behind announcements elsewhere. */
  isFinished(shardId: string): boolean | Promise<boolean>;
  close(): void | Promise<void>;
}

export interface FinishedShardRegistryContext {
  /**
   * The job attempt: `fencingTag(SourceReaderContext.fencing)`, so a restart (a higher epoch) starts a new
   * registry; a random id for a reader made by hand.
   */
  readonly attemptTag: string;
  /** The stream name or ARN. */
  readonly stream: string;
  /** The source's name: two sources reading one stream in a job need different names, or they share facts. */
  readonly source: string;
  readonly subtask: number;
}

export type FinishedShardRegistryFactory = (ctx: FinishedShardRegistryContext) => FinishedShardRegistry;

type RegistryMessage = { readonly kind: 'finished'; readonly shards: readonly string[] } | { readonly kind: 'sync' };

/**
 * The embedded runtime's registry: all subtasks are threads (or tasks) of one process, so a BroadcastChannel named
 * after the attempt and the stream reaches every reader. A reader that joins late asks the others to repeat what
 * they announced, so no announcement is lost to start-up order.
 */
export function broadcastFinishedShardRegistry(ctx: FinishedShardRegistryContext): FinishedShardRegistry {
  const finished = new Set<string>();
  const own = new Set<string>();
  const channel = new BroadcastChannel(`sluice/kinesis/finished-shards/${ctx.attemptTag}/${ctx.source}/${ctx.stream}`);
  channel.unref();
  channel.onmessage = (event: unknown) => {
    const message = (event as { data: RegistryMessage }).data;
    if (message.kind === 'finished') {
      for (const id of message.shards) finished.add(id);
    } else if (message.kind === 'sync' && own.size > 0) {
      channel.postMessage({ kind: 'finished', shards: [...own] } satisfies RegistryMessage);
    }
  };
  channel.postMessage({ kind: 'sync' } satisfies RegistryMessage);
  let closed = false;
  return {
    announce(shardIds) {
      const fresh = shardIds.filter((id) => !own.has(id));
      if (fresh.length === 0 || closed) return;
      for (const id of fresh) {
        own.add(id);
        finished.add(id);
      }
      channel.postMessage({ kind: 'finished', shards: fresh } satisfies RegistryMessage);
    },
    isFinished: (shardId) => finished.has(shardId),
    close() {
      if (closed) return;
      closed = true;
      channel.close();
    },
  };
}
