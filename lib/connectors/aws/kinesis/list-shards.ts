import type { Shard } from '@aws-sdk/client-kinesis';
import { streamRef, type KinesisApi } from './kinesis-api.ts';

/** Every shard of the stream that has not expired, open and closed, following `NextToken` pages. */
export async function listAllShards(api: KinesisApi, stream: string, signal?: AbortSignal): Promise<Shard[]> {
  const shards: Shard[] = [];
  let page = await api.listShards({ ...streamRef(stream) }, signal);
  for (;;) {
    shards.push(...(page.Shards ?? []));
    if (page.NextToken === undefined || page.NextToken === '') return shards;
    page = await api.listShards({ NextToken: page.NextToken }, signal);
  }
}
