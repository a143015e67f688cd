import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runOnThreads } from '../../lib/index.ts';
import { createStream, mergeShards, putRecords, readStream, splitShard } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator, type NumberedEvent } from '../harness/aws/kinesis-test-setup.ts';

type Event = NumberedEvent;

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
      .fromSource(kinesisSource({ stream: flags.input, clientConfig, startPosition: 'TRIM_HORIZON', shardDiscoveryIntervalMs: 50, stopWhenIdleMs: 3000 }))
      .keyBy((e) => e.k)
      .process({ processElement: (e, _ctx, out) => out.collect(e) })
      .sinkTo(kinesisSink({ stream: flags.output, clientConfig, partitionKey: (e) => e.k, maxInFlightRequests: 1, lingerMs: 10 }));
  },
});
`;

const kinesis = useKinesisEmulator();
let dir: string;

beforeAll(() => {
  dir = kinesis.tempDir('sluice-kinesis-threads-');
});

const shard = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

describe('kinesis source and sink on worker threads', () => {
  it('reads across a split and a merge between two threads, keeping per-key order into the output stream', async () => {
    await createStream(kinesis.client, 'threads-in', 4);
    await createStream(kinesis.client, 'threads-out', 2);
    const jobPath = join(dir, 'kinesis-job.ts');
    writeFileSync(jobPath, JOB);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }'); // an ES module, like the repository's own
    const next = new Map<string, number>();
    const phase = async () => {
      await putRecords(kinesis.client, 'threads-in', numberedEvents(200, 20, 'key-', next));
    };
    await phase();
    const job = runOnThreads({
      modulePath: jobPath,
      flags: { endpoint: kinesis.emu.endpoint, input: 'threads-in', output: 'threads-out' },
      jobOptions: { parallelism: 2, batchSize: 50 },
      checkpointing: { dir: join(dir, 'checkpoints'), intervalMs: 40 },
      restart: { kind: 'none' },
      log: () => {},
    });
    await new Promise((r) => setTimeout(r, 300));
    await phase();
    await splitShard(kinesis.client, 'threads-in', shard(3));
    await phase();
    // Shard 1 (first parent, subtask 1) with shard 2 (adjacent parent, subtask 0).
    await mergeShards(kinesis.client, 'threads-in', shard(1), shard(2));
    await phase();
    const result = await job;
    expect(result.sourceRecords).toBe(800);

    const out = (await readStream(kinesis.client, 'threads-out')).map((r) => JSON.parse(Buffer.from(r.record.Data!).toString('utf8')) as Event);
    expect(out).toHaveLength(800);
    const byKey = new Map<string, number[]>();
    for (const e of out) byKey.set(e.k, [...(byKey.get(e.k) ?? []), e.n]);
    for (const [k, count] of next) expect(byKey.get(k), k).toEqual(Array.from({ length: count }, (_, i) => i));
  });
});
