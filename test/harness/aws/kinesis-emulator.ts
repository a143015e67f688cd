import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
  MergeShardsCommand,
  PutRecordsCommand,
  SplitShardCommand,
  type KinesisClient,
  type Shard,
  type _Record,
} from '@aws-sdk/client-kinesis';

export interface KinesisEmulator {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Client overrides for the emulator: its endpoint, a region and dummy credentials. */
  readonly clientConfig: {
    readonly endpoint: string;
    readonly region: string;
    readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  stop(): Promise<void>;
}

interface KinesaliteOptions {
  createStreamMs?: number;
  deleteStreamMs?: number;
  updateStreamMs?: number;
  shardLimit?: number;
}

// kinesalite ships no types; it is a CommonJS factory returning an http.Server.
const kinesalite = createRequire(import.meta.url)('kinesalite') as (options: KinesaliteOptions) => Server;

/**
 * Starts kinesalite in this process on 127.0.0.1 and a free port (its CLI cannot bind to loopback only), with
 * streams and reshards that become ACTIVE at once. Its data lives in memory and is gone after `stop`.
 */
export async function startKinesisEmulator(): Promise<KinesisEmulator> {
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 100 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    clientConfig: { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

// ---- Stream administration for tests (through the SDK, as any Kinesis client would) ----

/** A record to put: `data` is JSON-encoded unless it is already bytes. */
export interface TestRecord {
  readonly key: string;
  readonly data: unknown;
}

async function waitActive(client: KinesisClient, stream: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const out = await client.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    if (out.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`stream ${stream} did not become ACTIVE`);
}

export async function createStream(client: KinesisClient, stream: string, shards: number): Promise<void> {
  await client.send(new CreateStreamCommand({ StreamName: stream, ShardCount: shards }));
  await waitActive(client, stream);
}

/** Puts records in order (one PutRecords call per 500), returning their shard ids and sequence numbers. */
export async function putRecords(
  client: KinesisClient,
  stream: string,
  records: readonly TestRecord[],
): Promise<{ shardId: string; sequenceNumber: string }[]> {
  const out: { shardId: string; sequenceNumber: string }[] = [];
  for (let i = 0; i < records.length; i += 500) {
    const chunk = records.slice(i, i + 500);
    const res = await client.send(
      new PutRecordsCommand({
        StreamName: stream,
        Records: chunk.map((r) => ({
          PartitionKey: r.key,
          Data: r.data instanceof Uint8Array ? r.data : Buffer.from(JSON.stringify(r.data)),
        })),
      }),
    );
    if ((res.FailedRecordCount ?? 0) > 0) throw new Error(`test put failed: ${JSON.stringify(res.Records)}`);
    for (const r of res.Records ?? []) out.push({ shardId: r.ShardId as string, sequenceNumber: r.SequenceNumber as string });
  }
  return out;
}

export async function listShards(client: KinesisClient, stream: string): Promise<Shard[]> {
  return (await client.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
}

/** Splits `shardId` in the middle of its hash key range; returns the two children's ids. */
export async function splitShard(client: KinesisClient, stream: string, shardId: string): Promise<string[]> {
  const before = await listShards(client, stream);
  const shard = before.find((s) => s.ShardId === shardId);
  if (shard?.HashKeyRange === undefined) throw new Error(`no shard ${shardId}`);
  const mid = (BigInt(shard.HashKeyRange.StartingHashKey as string) + BigInt(shard.HashKeyRange.EndingHashKey as string)) / 2n;
  await client.send(new SplitShardCommand({ StreamName: stream, ShardToSplit: shardId, NewStartingHashKey: mid.toString() }));
  await waitActive(client, stream);
  return (await listShards(client, stream)).filter((s) => s.ParentShardId === shardId).map((s) => s.ShardId as string);
}

/** Merges two adjacent shards; returns the child's id. */
export async function mergeShards(client: KinesisClient, stream: string, shard: string, adjacent: string): Promise<string> {
  await client.send(new MergeShardsCommand({ StreamName: stream, ShardToMerge: shard, AdjacentShardToMerge: adjacent }));
  await waitActive(client, stream);
  const child = (await listShards(client, stream)).find((s) => s.ParentShardId === shard || s.AdjacentParentShardId === shard);
  if (child === undefined) throw new Error('merge produced no child');
  return child.ShardId as string;
}

/** Every record of every shard, from TRIM_HORIZON, per shard in order. */
export async function readStream(client: KinesisClient, stream: string): Promise<{ shardId: string; record: _Record }[]> {
  const out: { shardId: string; record: _Record }[] = [];
  for (const shard of await listShards(client, stream)) {
    let iterator = (
      await client.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))
    ).ShardIterator;
    while (iterator !== undefined) {
      const res = await client.send(new GetRecordsCommand({ ShardIterator: iterator }));
      for (const record of res.Records ?? []) out.push({ shardId: shard.ShardId as string, record });
      if ((res.Records ?? []).length === 0) break; // caught up (open shard) or at the end (closed)
      iterator = res.NextShardIterator;
    }
  }
  return out;
}
