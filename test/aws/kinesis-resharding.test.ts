import { describe, expect, it } from 'vitest';
import { StreamEnvironment, collectSink, runInThisThread, systemClock } from '../../lib/index.ts';
import type { SourceReaderContext } from '../../lib/connectors/source.ts';
import {
  broadcastFinishedShardRegistry,
  kinesisSource,
  type FinishedShardRegistryFactory,
  type KinesisShardSplit,
  type KinesisSourceReader,
} from '../../lib/connectors/aws/kinesis/index.ts';
import { listShards, mergeShards, putRecords, splitShard } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator, type NumberedEvent } from '../harness/aws/kinesis-test-setup.ts';

type Event = NumberedEvent;

const kinesis = useKinesisEmulator();

const shard = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

/** Numbered events per key, continuing from `next`. */
const events = (count: number, keys: number, next: Map<string, number>) => numberedEvents(count, keys, 'key-', next);

async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Records per key must arrive exactly once and in the order they were put. */
function expectPerKeyOrder(got: Event[], expected: Map<string, number>): void {
  const byKey = new Map<string, number[]>();
  for (const e of got) byKey.set(e.k, [...(byKey.get(e.k) ?? []), e.n]);
  expect([...byKey.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [k, count] of expected) {
    expect(byKey.get(k), `order of ${k}`).toEqual(Array.from({ length: count }, (_, i) => i));
  }
}

describe('kinesis source across SplitShard and MergeShards', () => {
  it.each([
    // Without checkpoints finished shards are announced at once; with them, after the checkpoint completes.
    { parallelism: 1, checkpoints: false },
    { parallelism: 2, checkpoints: true },
  ])('loses nothing and keeps per-key order (parallelism $parallelism, checkpoints $checkpoints)', async ({ parallelism, checkpoints }) => {
    const stream = await kinesis.newStream('reshard', 4);
    const next = new Map<string, number>();
    const announced: string[] = [];
    const registry: FinishedShardRegistryFactory = (ctx) => {
      const inner = broadcastFinishedShardRegistry(ctx);
      return { ...inner, announce: (ids) => (announced.push(...ids), inner.announce(ids)) };
    };
    const source = kinesisSource<Event>({
      stream,
      clientConfig: kinesis.emu.clientConfig,
      startPosition: 'TRIM_HORIZON',
      shardDiscoveryIntervalMs: 50,
      // The job ends once the shards are quiet this long: longer than any pause between the test's phases can be on a
      // loaded machine, or it would end before the last phase and miss its records.
      stopWhenIdleMs: 3000,
      finishedShards: registry,
    });
    // Shards 1 and 2 are adjacent and, at parallelism 2, read by different subtasks.
    expect(source.subtaskOf({ rootShardId: shard(1) } as KinesisShardSplit, 2)).not.toBe(
      source.subtaskOf({ rootShardId: shard(2) } as KinesisShardSplit, 2),
    );

    const env = new StreamEnvironment({ parallelism, batchSize: 50 });
    const sink = collectSink<Event>();
    env
      .fromSource(source)
      .keyBy((e) => e.k)
      .process<Event>({ processElement: (e, _ctx, out) => out.collect(e) })
      .sinkTo(sink);
    const dir = kinesis.tempDir('sluice-kinesis-reshard-');
    const job = runInThisThread(env, {
      log: () => {},
      ...(checkpoints ? { checkpointing: { dir, intervalMs: 40 }, restart: { kind: 'none' as const } } : {}),
    });

    let put = 0;
    const phase = async () => {
      const batch = events(240, 24, next);
      put += batch.length;
      await putRecords(kinesis.client, stream, batch);
    };
    await phase();
    await until(() => sink.values.length >= put, 'the first records');
    // Split shard 3 (both children stay with its reader), with records in flight on both sides.
    await phase();
    const children = await splitShard(kinesis.client, stream, shard(3));
    await phase();
    // Merge 1 (ShardToMerge: the child's parent) with its neighbour 2, which another subtask reads at parallelism 2.
    const merged = await mergeShards(kinesis.client, stream, shard(1), shard(2));
    await phase();
    // Merge the split's children again (one reader sequences all three).
    await mergeShards(kinesis.client, stream, children[0] as string, children[1] as string);
    await phase();
    await job;

    expect(sink.values).toHaveLength(put);
    expectPerKeyOrder(sink.values, next);
    const lineage = (await listShards(kinesis.client, stream)).find((s) => s.ShardId === merged);
    expect(lineage?.ParentShardId).toBe(shard(1));
    expect(lineage?.AdjacentParentShardId).toBe(shard(2));
    // Parents were announced: shard 2 is what the merged child's reader waited for at parallelism 2.
    expect(announced).toEqual(expect.arrayContaining([shard(1), shard(2), shard(3)]));
  });
});

/** Attempt 'a<n>' (or any name ending in n) runs with epoch n; others with epoch 0. */
function context(subtask: number, attempt: string): SourceReaderContext {
  const epoch = Number(/\d+$/.exec(attempt)?.[0] ?? 0);
  return { subtask, parallelism: 2, clock: systemClock, signal: new AbortController().signal, fencing: { attempt: 0, epoch }, checkpointing: true };
}

/** Polls until `done` holds (or, without `done`, for `forMs`), collecting values and finished splits. */
async function pollValues(
  reader: KinesisSourceReader<Event>,
  forMs: number,
  done?: (got: { values: Event[]; finished: string[] }) => boolean,
): Promise<{ values: Event[]; finished: string[] }> {
  const got = { values: [] as Event[], finished: [] as string[] };
  const deadline = Date.now() + forMs;
  while (Date.now() < deadline && done?.(got) !== true) {
    const r = await reader.poll(100);
    if (r.kind === 'batch') {
      got.values.push(...r.batch.values);
      got.finished.push(...(r.finishedSplits ?? []));
    } else if (r.kind === 'wait') await new Promise((res) => setTimeout(res, Math.min(r.retryAfterMs, 20)));
    else break;
  }
  return got;
}

describe('merged child of parents read by two subtasks', () => {
  it('is read only once the other parent is finished in a completed checkpoint', async () => {
    const stream = await kinesis.newStream('merge-wait', 2);
    const source = kinesisSource<Event>({ stream, clientConfig: kinesis.emu.clientConfig, startPosition: 'TRIM_HORIZON', shardDiscoveryIntervalMs: 50 });
    const splits = await source.createSplits({ parallelism: 2 });
    const of = (subtask: number) => splits.filter((s) => source.subtaskOf(s, 2) === subtask);
    expect(of(0).map((s) => s.id)).toEqual([shard(0)]);
    expect(of(1).map((s) => s.id)).toEqual([shard(1)]);
    const next = new Map<string, number>();
    await putRecords(kinesis.client, stream, events(100, 10, next));
    // The child's first parent is 0 (subtask 0), its adjacent parent 1 (subtask 1).
    const child = await mergeShards(kinesis.client, stream, shard(0), shard(1));
    await putRecords(kinesis.client, stream, events(50, 10, next));

    const attempt = `attempt-${stream}`;
    const x = source.createReader(of(0), context(0, attempt));
    const y = source.createReader(of(1), context(1, attempt));
    try {
      const fromY = await pollValues(y, 5000, (g) => g.finished.length > 0);
      const fromX = await pollValues(x, 5000, (g) => g.finished.length > 0 && x.currentSplits().length > 1);
      expect(fromX.finished).toEqual([shard(0)]);
      expect(fromY.finished).toEqual([shard(1)]);
      // Subtask 0 discovered the child, but shard 1 is not yet finished in a completed checkpoint.
      expect(x.currentSplits().map((s) => s.id)).toContain(child);
      expect(fromX.values.length + fromY.values.length).toBe(100);
      expect((await pollValues(x, 300)).values).toEqual([]);

      // Subtask 1's checkpoint 1 holds shard 1 as finished; only its completion lets the child go.
      expect(y.currentSplits(1).find((s) => s.id === shard(1))?.finished).toBe(true);
      expect((await pollValues(x, 150)).values).toEqual([]);
      await y.notifyCheckpointComplete(1);
      const rest = await pollValues(x, 5000, (g) => g.values.length >= 50);
      expect(rest.values).toHaveLength(50);
      const all = [...fromX.values, ...fromY.values, ...rest.values].map((e) => `${e.k}#${e.n}`);
      expect(new Set(all).size).toBe(150);
    } finally {
      await x.close();
      await y.close();
    }
  });

  it('a restarted reader announces restored finished shards at once', async () => {
    const stream = await kinesis.newStream('merge-restore', 2);
    const source = kinesisSource<Event>({ stream, clientConfig: kinesis.emu.clientConfig, startPosition: 'TRIM_HORIZON', shardDiscoveryIntervalMs: 50 });
    const splits = await source.createSplits({ parallelism: 2 });
    await mergeShards(kinesis.client, stream, shard(0), shard(1));
    const next = new Map<string, number>();
    await putRecords(kinesis.client, stream, events(30, 3, next));
    const attempt = `attempt-${stream}`;
    // As restored from a checkpoint: shard 0 finished (subtask 0), shard 1 finished (subtask 1), child not started.
    const restored = (id: string) => ({ ...(splits.find((s) => s.id === id) as KinesisShardSplit), finished: true });
    const x = source.createReader([restored(shard(0))], context(0, attempt));
    const y = source.createReader([restored(shard(1))], context(1, attempt));
    try {
      await y.poll(10);
      const got = await pollValues(x, 5000, (g) => g.values.length >= 30);
      expect(got.values).toHaveLength(30);
    } finally {
      await x.close();
      await y.close();
    }
  });
});
