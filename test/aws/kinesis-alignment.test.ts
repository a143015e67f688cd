import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  StreamEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  collectSink,
  runInThisThread,
  systemClock,
  type AggregateFunction,
} from '../../lib/index.ts';
import { kinesisSource, type KinesisShardSplit } from '../../lib/connectors/aws/kinesis/index.ts';
import { putRecords } from '../harness/aws/kinesis-emulator.ts';
import { useKinesisEmulator } from '../harness/aws/kinesis-test-setup.ts';

interface Event {
  readonly k: string;
  readonly ts: number;
}

const kinesis = useKinesisEmulator();
const WINDOW_MS = 10_000;

/** Of a stream of two shards, the one a partition key goes to (shard 0 owns the lower half of the MD5 hash range). */
const shardOf = (key: string): 0 | 1 => ((createHash('md5').update(key).digest()[0] as number) < 0x80 ? 0 : 1);

/** Two keys per shard: 'a*' keys on shard 0, 'b*' keys on shard 1. */
function keysByShard(): { lower: string[]; upper: string[] } {
  const lower: string[] = [];
  const upper: string[] = [];
  for (let i = 0; lower.length < 2 || upper.length < 2; i++) {
    const key = `key-${i}`;
    if (shardOf(key) === 0) {
      if (lower.length < 2) lower.push(key);
    } else if (upper.length < 2) upper.push(key);
  }
  return { lower, upper };
}

/**
 * One event every 100 ms on each shard: `perShard` events on shard 1 from event time perShard x 100 ms on, and on
 * shard 0 `lowerFactor` x `perShard` events from 0 on. Read at the same pace, shard 1 runs ahead.
 */
async function skewedStream(perShard: number, lowerFactor = 2): Promise<string> {
  const stream = await kinesis.newStream('align', 2);
  const { lower, upper } = keysByShard();
  const records = [];
  for (let i = 0; i < Math.max(lowerFactor * perShard, perShard); i++) {
    const a = lower[i % 2] as string;
    if (i < lowerFactor * perShard) records.push({ key: a, data: { k: a, ts: i * 100 } });
    if (i < perShard) {
      const b = upper[i % 2] as string;
      records.push({ key: b, data: { k: b, ts: perShard * 100 + i * 100 } });
    }
  }
  const placed = await putRecords(kinesis.client, stream, records);
  // The test relies on where Kinesis put them.
  expect(new Set(placed.map((p) => p.shardId)).size).toBe(2);
  return stream;
}

describe('kinesis source with watermark alignment', () => {
  it('does not fetch or return records of a paused shard until it is resumed', async () => {
    const stream = await skewedStream(100);
    const source = kinesisSource<Event>({ stream, clientConfig: kinesis.emu.clientConfig, startPosition: 'TRIM_HORIZON' });
    const splits: KinesisShardSplit[] = await source.createSplits({ parallelism: 1 });
    const reader = await source.createReader(splits, {
      subtask: 0,
      parallelism: 1,
      clock: systemClock,
      signal: new AbortController().signal,
      fencing: { attempt: 0, epoch: 0 },
    });
    try {
      const [first, second] = splits.map((s) => s.id).sort() as [string, string];
      reader.pauseOrResumeSplits!([first], []);
      const seen = new Map<string, number>();
      const read = async (until: () => boolean) => {
        const deadline = Date.now() + 30_000;
        while (!until() && Date.now() < deadline) {
          const r = await reader.poll(50);
          if (r.kind === 'batch') seen.set(r.batch.split, (seen.get(r.batch.split) ?? 0) + r.batch.values.length);
          else await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      // skewedStream(100): 200 events on the first shard (the lower hash range), 100 on the second.
      await read(() => (seen.get(second) ?? 0) === 100);
      expect(seen.get(second)).toBe(100);
      // The paused shard has data, but none of it comes while paused (polled as long again as the other one took).
      const polls = 50;
      for (let i = 0; i < polls; i++) {
        const r = await reader.poll(50);
        if (r.kind === 'batch') seen.set(r.batch.split, (seen.get(r.batch.split) ?? 0) + r.batch.values.length);
      }
      expect(seen.get(first)).toBeUndefined();
      reader.pauseOrResumeSplits!([], [first]);
      await read(() => (seen.get(first) ?? 0) === 200);
      expect(seen.get(first)).toBe(200);
    } finally {
      await reader.close();
    }
  });

  it('keeps windows in state bounded when one shard is far ahead, with the results of an unaligned run', async () => {
    const perShard = 3000;
    const stream = await skewedStream(perShard);
    const run = async (strategy: WatermarkStrategy<Event>) => {
      let open = 0;
      let maxOpen = 0;
      const probe: AggregateFunction<Event, number, number> = {
        createAccumulator: () => {
          maxOpen = Math.max(maxOpen, ++open);
          return 0;
        },
        add: (_e, acc) => acc + 1,
        getResult: (acc) => {
          open--;
          return acc;
        },
        merge: (a, b) => a + b,
      };
      const env = new StreamEnvironment({ parallelism: 1, batchSize: 50 });
      const sink = collectSink<string>();
      env
        .fromSource(
          kinesisSource<Event>({
            stream,
            clientConfig: kinesis.emu.clientConfig,
            startPosition: 'TRIM_HORIZON',
            stopWhenIdleMs: 500,
            // Small fetches: the shards are read side by side, a little at a time.
            reader: { type: 'polling', intervalMs: 200, maxRecordsPerCall: 500 },
          }),
          strategy,
        )
        .keyBy((e) => e.k)
        .window(TumblingEventTimeWindows.of(WINDOW_MS))
        .aggregate(probe, (n, key, w) => `${key}@${w.start}=${n}`)
        .sinkTo(sink);
      await runInThisThread(env, { log: () => {} });
      return { rows: [...sink.values].sort(), maxOpen };
    };
    const strategy = WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((e) => e.ts);
    const aligned = await run(strategy.withWatermarkAlignment('shards', 30_000, 20));
    const unaligned = await run(strategy.withoutWatermarkAlignment());
    // 10 s windows: 2 keys over 2 x 300 s, 2 keys over 300 s.
    expect(aligned.rows).toHaveLength(2 * 60 + 2 * 30);
    expect(aligned.rows).toEqual(unaligned.rows);
    const bound = 4 * (30_000 / WINDOW_MS + 4);
    expect(aligned.maxOpen).toBeLessThanOrEqual(bound);
    expect(unaligned.maxOpen).toBeGreaterThan(bound);
  });

  it('does not wait for a shard that has nothing left to read: a job that stops when idle ends', async () => {
    // Shard 0 ends at event time 100 s, where shard 1 starts: once shard 0 is read, shard 1 has nobody to wait for.
    const stream = await skewedStream(1000, 1);
    const env = new StreamEnvironment({ parallelism: 1, batchSize: 50 });
    const sink = collectSink<Event>();
    env
      .fromSource(
        kinesisSource<Event>({
          stream,
          clientConfig: kinesis.emu.clientConfig,
          startPosition: 'TRIM_HORIZON',
          stopWhenIdleMs: 500,
          reader: { type: 'polling', intervalMs: 200, maxRecordsPerCall: 500 },
        }),
        WatermarkStrategy.forMonotonousTimestamps<Event>()
          .withTimestampAssigner((e) => e.ts)
          .withWatermarkAlignment('shards', 1000, 20),
      )
      .sinkTo(sink);
    await runInThisThread(env, { log: () => {} });
    expect(sink.values).toHaveLength(2000);
  });
});
