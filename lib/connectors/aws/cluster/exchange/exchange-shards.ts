import { ConfigError } from '../../../../core/index.ts';
import { streamRef, type KinesisApi } from '../../kinesis/kinesis-api.ts';

/** An open shard of the exchange stream and the hash key that routes a record to it. */
export interface ExchangeShard {
  readonly shardId: string;
  readonly startingHashKey: string;
}

/**
 * The exchange stream's open shards in hash-key order: shard s is slot s's input. The stream must have exactly P
 * open shards (a ConfigError otherwise): with more or fewer, a slot's records would land in a shard nobody reads.
 */
export async function listExchangeShards(api: KinesisApi, stream: string, parallelism: number, signal?: AbortSignal): Promise<ExchangeShard[]> {
  const open: ExchangeShard[] = [];
  let nextToken: string | undefined;
  do {
    const out = await api.listShards(nextToken === undefined ? { ...streamRef(stream) } : { NextToken: nextToken }, signal);
    for (const shard of out.Shards ?? []) {
      if (shard.SequenceNumberRange?.EndingSequenceNumber !== undefined) continue;
      const startingHashKey = shard.HashKeyRange?.StartingHashKey;
      if (shard.ShardId === undefined || startingHashKey === undefined) continue;
      open.push({ shardId: shard.ShardId, startingHashKey });
    }
    nextToken = out.NextToken;
  } while (nextToken !== undefined);
  if (open.length !== parallelism) {
    throw new ConfigError(
      `exchange stream "${stream}" has ${open.length} open shards, but the job runs ${parallelism} slots and needs exactly ${parallelism}: ` +
        `create the stream with ${parallelism} shards and do not reshard it (or pass another --exchange-stream)`,
    );
  }
  return open.sort((a, b) => (BigInt(a.startingHashKey) < BigInt(b.startingHashKey) ? -1 : 1));
}
