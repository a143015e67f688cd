// A shard that is slow to answer is behind, not idle (issue 11 item 5): with withIdleness, a shard whose first
// GetShardIterator / GetRecords takes longer than the idle timeout must still hold the watermark back, so that its
// records are not dropped as late once they come. The fault is a delayed first call on one shard; correctness does
// not depend on timing (the job must be exact however long the delay).
import { describe, expect, it } from 'vitest';
import { StreamEnvironment, TumblingEventTimeWindows, WatermarkStrategy, collectSink, runInThisThread } from '../../lib/index.ts';
import { kinesisSource, type KinesisApi } from '../../lib/connectors/aws/kinesis/index.ts';
import { putRecords } from '../harness/aws/kinesis-emulator.ts';
import { useKinesisEmulator } from '../harness/aws/kinesis-test-setup.ts';

interface Timed {
  readonly k: string;
  readonly ts: number;
}

const kinesis = useKinesisEmulator();

/** `count` events over 8 keys with event times 10 ms apart, in put order: each shard's records are in time order. */
function timedEvents(count: number): { key: string; data: Timed }[] {
  return Array.from({ length: count }, (_, i) => ({ key: `k${i % 8}`, data: { k: `k${i % 8}`, ts: 1_000_000 + i * 10 } }));
}

/** The connector's API with the first GetShardIterator of `shardId` held back for `delayMs`. */
function slowShardApi(shardId: string, delayMs: number): { api: KinesisApi; delayed: () => boolean } {
  let held = false;
  const api: KinesisApi = {
    ...kinesis.api,
    async getShardIterator(input, signal) {
      if (input.ShardId === shardId && !held) {
        held = true;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
      return kinesis.api.getShardIterator(input, signal);
    },
  };
  return { api, delayed: () => held };
}

describe('kinesis source idleness', () => {
  it('a shard whose first read is slower than the idle timeout is not idle: no record is dropped as late', async () => {
    const stream = await kinesis.newStream('slow-shard', 2);
    const input = timedEvents(2_000);
    const placed = await putRecords(kinesis.client, stream, input);
    const slowShard = placed[0]!.shardId === 'shardId-000000000001' ? 'shardId-000000000001' : 'shardId-000000000000';
    expect(new Set(placed.map((p) => p.shardId)).size, 'both shards have records').toBe(2);
    // Delay far beyond the idle timeout: before the fix the slow shard was marked idle after 200 ms.
    const { api, delayed } = slowShardApi(slowShard, 2_500);

    const env = new StreamEnvironment({ parallelism: 1 });
    const sink = collectSink<{ window: number; count: number }>();
    env
      .fromSource(
        kinesisSource<Timed>({
          stream,
          client: () => api,
          startPosition: 'TRIM_HORIZON',
          // The fast shard keeps delivering (100 records per call, 5 calls/s) while the slow one has not answered.
          reader: { type: 'polling', maxRecordsPerCall: 100 },
          stopWhenIdleMs: 500,
          shardDiscoveryIntervalMs: 0,
        }),
        WatermarkStrategy.forMonotonousTimestamps<Timed>()
          .withTimestampAssigner((e) => e.ts)
          .withIdleness(200),
      )
      .keyBy(() => 'all')
      .window(TumblingEventTimeWindows.of(1_000))
      .aggregate(
        { createAccumulator: () => 0, add: (_e: Timed, n: number) => n + 1, getResult: (n: number) => n, merge: (a: number, b: number) => a + b },
        (count, _key, window) => ({ window: window.start, count }),
      )
      .sinkTo(sink);
    const result = await runInThisThread(env, { log: () => {} });

    expect(delayed()).toBe(true);
    const counted = sink.values.reduce((sum, w) => sum + w.count, 0);
    expect({ counted, droppedLateRecords: result.droppedLateRecords }).toEqual({ counted: input.length, droppedLateRecords: 0 });
  }, 60_000);
});
