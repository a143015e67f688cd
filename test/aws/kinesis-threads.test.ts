import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOnThreads } from '../../lib/index.ts';
import { awsClientConfig } from '../../lib/connectors/aws/client-config.ts';
import {
  createStream,
  mergeShards,
  putRecords,
  readStream,
  splitShard,
  startKinesisEmulator,
  type KinesisEmulator,
} from '../harness/aws/kinesis-emulator.ts';

interface Event {
  k: string;
  n: number;
}

const lib = (path: string) => JSON.stringify(fileURLToPath(new URL(`../../lib/${path}`, import.meta.url)));

/**
 * Kinesis in, keyed pass-through, Kinesis out: each subtask is a worker thread, so finished merge parents reach
 * the other subtask's reader through the BroadcastChannel between threads. One PutRecords call in flight per
 * writer keeps each key's order in the output stream.
 */
const JOB = `
import { defineJob } from ${lib('index.ts')};
import { kinesisSink, kinesisSource } from ${lib('connectors/aws/kinesis/index.ts')};

export default defineJob({
  name: 'kinesis-pass-through',
  flags: {
    endpoint: { type: 'string', required: true, description: 'emulator endpoint' },
    input: { type: 'string', required: true, description: 'input stream' },
    output: { type: 'string', required: true, description: 'output stream' },
  },
  build(env, flags) {
    const clientConfig = { endpoint: flags.endpoint, region: 'us-east-1', credentials: { accessKeyId: 't', secretAccessKey: 't' } };
    env
      .fromSource(kinesisSource({ stream: flags.input, clientConfig, startPosition: 'TRIM_HORIZON', shardDiscoveryIntervalMs: 50, stopWhenIdleMs: 1000 }))
      .keyBy((e) => e.k)
      .process({ processElement: (e, _ctx, out) => out.collect(e) })
      .sinkTo(kinesisSink({ stream: flags.output, clientConfig, partitionKey: (e) => e.k, maxInFlightRequests: 1, lingerMs: 10 }));
  },
});
`;

let emu: KinesisEmulator;
let client: KinesisClient;
let dir: string;

beforeAll(async () => {
  emu = await startKinesisEmulator();
  client = new KinesisClient(awsClientConfig('kinesis', emu.clientConfig));
  dir = mkdtempSync(join(tmpdir(), 'sluice-kinesis-threads-'));
});
afterAll(async () => {
  client.destroy();
  await emu.stop();
  rmSync(dir, { recursive: true, force: true });
});

const shard = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

describe('kinesis source and sink on worker threads', () => {
  it('reads across a split and a merge between two threads, keeping per-key order into the output stream', async () => {
    await createStream(client, 'threads-in', 4);
    await createStream(client, 'threads-out', 2);
    const jobPath = join(dir, 'kinesis-job.ts');
    writeFileSync(jobPath, JOB);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }'); // an ES module, like the repository's own
    const next = new Map<string, number>();
    const phase = async () => {
      const batch = Array.from({ length: 200 }, (_, i) => {
        const k = `key-${i % 20}`;
        const n = next.get(k) ?? 0;
        next.set(k, n + 1);
        return { key: k, data: { k, n } };
      });
      await putRecords(client, 'threads-in', batch);
    };
    await phase();
    const job = runOnThreads({
      modulePath: jobPath,
      flags: { endpoint: emu.endpoint, input: 'threads-in', output: 'threads-out' },
      jobOptions: { parallelism: 2, batchSize: 50 },
      checkpointing: { dir: join(dir, 'checkpoints'), intervalMs: 40 },
      restart: { kind: 'none' },
      log: () => {},
    });
    await new Promise((r) => setTimeout(r, 300));
    await phase();
    await splitShard(client, 'threads-in', shard(3));
    await phase();
    // Shard 1 (first parent, subtask 1) with shard 2 (adjacent parent, subtask 0).
    await mergeShards(client, 'threads-in', shard(1), shard(2));
    await phase();
    const result = await job;
    expect(result.sourceRecords).toBe(800);

    const out = (await readStream(client, 'threads-out')).map((r) => JSON.parse(Buffer.from(r.record.Data!).toString('utf8')) as Event);
    expect(out).toHaveLength(800);
    const byKey = new Map<string, number[]>();
    for (const e of out) byKey.set(e.k, [...(byKey.get(e.k) ?? []), e.n]);
    for (const [k, count] of next) expect(byKey.get(k), k).toEqual(Array.from({ length: count }, (_, i) => i));
  });
});
