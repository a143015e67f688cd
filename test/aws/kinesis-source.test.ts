import { KinesisClient } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { StreamEnvironment, collectSink, runInThisThread, systemClock } from '../../lib/index.ts';
import type { SourceReaderContext } from '../../lib/connectors/source.ts';
import { awsClientConfig } from '../../lib/connectors/aws/client-config.ts';
import { kinesisApi, kinesisSource, type KinesisApi, type KinesisSourceOptions } from '../../lib/connectors/aws/kinesis/index.ts';
import { putRecords } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator, type NumberedEvent } from '../harness/aws/kinesis-test-setup.ts';
import { committingSink } from '../harness/committing-sink.ts';

type Event = NumberedEvent;

const kinesis = useKinesisEmulator();
const tempDir = () => kinesis.tempDir();
const newStream = (shards: number) => kinesis.newStream('source', shards);

/** `count` events over `keys` keys, numbered per key from `from[key]`. */
const events = (count: number, keys: number, tag = 'e', from?: Map<string, number>) => numberedEvents(count, keys, tag, from);

const sorted = (values: Event[]) => values.map((e) => `${e.k}#${e.n}`).sort();

function options(stream: string, extra: Partial<KinesisSourceOptions<Event>> = {}): KinesisSourceOptions<Event> {
  return { stream, clientConfig: kinesis.emu.clientConfig, stopWhenIdleMs: 300, shardDiscoveryIntervalMs: 100, ...extra };
}

async function runToIdle(source: ReturnType<typeof kinesisSource<Event>>, parallelism = 1): Promise<Event[]> {
  const env = new StreamEnvironment({ parallelism });
  const sink = collectSink<Event>();
  env.fromSource(source).sinkTo(sink);
  await runInThisThread(env, { log: () => {} });
  return sink.values;
}

function readerContext(extra: Partial<SourceReaderContext> = {}): SourceReaderContext {
  return { subtask: 0, parallelism: 1, clock: systemClock, signal: new AbortController().signal, fencing: { attempt: 0, epoch: 0 }, ...extra };
}

describe('kinesis source start positions', () => {
  it('TRIM_HORIZON reads every record already in the stream, per key in order', async () => {
    const stream = await newStream(3);
    const input = events(300, 12);
    const before = Date.now();
    await putRecords(kinesis.client, stream, input);
    const after = Date.now();
    const env = new StreamEnvironment({ parallelism: 2 });
    const sink = collectSink<Event>();
    env.fromSource(kinesisSource<Event>(options(stream, { startPosition: 'TRIM_HORIZON' }))).sinkTo(sink);
    await runInThisThread(env, { log: () => {} });
    const got = sink.values;
    expect(sorted(got)).toEqual(sorted(input.map((r) => r.data)));
    // Timestamps are ApproximateArrivalTimestamp.
    for (const t of sink.timestamps) {
      expect(t).toBeGreaterThanOrEqual(before - 1);
      expect(t).toBeLessThanOrEqual(after + 1);
    }
    const last = new Map<string, number>();
    for (const e of got) {
      expect(e.n).toBe((last.get(e.k) ?? -1) + 1);
      last.set(e.k, e.n);
    }
  });

  it('LATEST skips what was there before the reader asked for its shards', async () => {
    const stream = await newStream(2);
    await putRecords(kinesis.client, stream, events(50, 5, 'old'));
    // Resolves once both shards have an iterator: from then on, new records must be read.
    let iterators = 0;
    let ready!: () => void;
    const readyPromise = new Promise<void>((r) => (ready = r));
    const real = kinesisApi(new KinesisClient(awsClientConfig('kinesis', kinesis.emu.clientConfig)));
    const api: KinesisApi = {
      ...real,
      async getShardIterator(input, signal) {
        const out = await real.getShardIterator(input, signal);
        if (++iterators === 2) ready();
        return out;
      },
    };
    // The reader ends once quiet this long: longer than putting the new records can take on a loaded machine.
    const running = runToIdle(kinesisSource<Event>(options(stream, { startPosition: 'LATEST', client: () => api, stopWhenIdleMs: 3000 })));
    await readyPromise;
    const fresh = events(40, 5, 'new');
    await putRecords(kinesis.client, stream, fresh);
    const got = await running;
    real.destroy?.();
    expect(sorted(got)).toEqual(sorted(fresh.map((r) => r.data)));
  });

  it('AT_TIMESTAMP starts at the first record that arrived at or after the time', async () => {
    const stream = await newStream(1);
    await putRecords(kinesis.client, stream, events(30, 3, 'before'));
    await new Promise((r) => setTimeout(r, 30));
    const at = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const after = events(30, 3, 'after');
    await putRecords(kinesis.client, stream, after);
    const got = await runToIdle(kinesisSource<Event>(options(stream, { startPosition: { atTimestamp: new Date(at) } })));
    expect(sorted(got)).toEqual(sorted(after.map((r) => r.data)));
  });
});

describe('kinesis source positions in checkpoints', () => {
  it('a reader restored from currentSplits reads no record twice and misses none', async () => {
    const stream = await newStream(2);
    const input = events(400, 8);
    await putRecords(kinesis.client, stream, input);
    const source = kinesisSource<Event>(options(stream, { startPosition: 'TRIM_HORIZON', stopWhenIdleMs: 300 }));
    const first = source.createReader(await source.createSplits({ parallelism: 1 }), readerContext({ fencing: { attempt: 0, epoch: 1 } }));
    const seen: Event[] = [];
    // Read about half, in small batches, then "checkpoint" and stop.
    while (seen.length < 170) {
      const r = await first.poll(25);
      if (r.kind === 'batch') seen.push(...r.batch.values);
      else if (r.kind === 'wait') await new Promise((res) => setTimeout(res, r.retryAfterMs));
      else break;
    }
    const checkpoint = structuredClone(first.currentSplits(1));
    await first.close();
    expect(checkpoint.some((s) => s.position.type === 'AFTER_SEQUENCE_NUMBER')).toBe(true);

    const second = source.createReader(checkpoint, readerContext({ fencing: { attempt: 1, epoch: 2 } }));
    for (;;) {
      const r = await second.poll(100);
      if (r.kind === 'end') break;
      if (r.kind === 'batch') seen.push(...r.batch.values);
      else await new Promise((res) => setTimeout(res, r.retryAfterMs));
    }
    await second.close();
    expect(sorted(seen)).toEqual(sorted(input.map((r) => r.data)));
  });

  it('a failing job restarts from its checkpoint with every record exactly once (parallelism 2)', async () => {
    const parallelism = 2;
    const stream = await newStream(3);
    const input = events(600, 10);
    await putRecords(kinesis.client, stream, input);
    const committed = new Map<string, Event[]>();
    const failAt = { after: 250, seen: 0, armed: true };
    const env = new StreamEnvironment({ parallelism, batchSize: 20 });
    env
      .fromSource(
        // Small fetches spread the input over several checkpoints, so the failure comes after some completed.
        kinesisSource<Event>(
          options(stream, { startPosition: 'TRIM_HORIZON', stopWhenIdleMs: 500, reader: { type: 'polling', maxRecordsPerCall: 50 } }),
        ),
      )
      .map((e) => {
        if (failAt.armed && ++failAt.seen === failAt.after) {
          failAt.armed = false;
          throw new Error('injected failure');
        }
        return e;
      })
      .sinkTo(committingSink(committed));
    const logs: string[] = [];
    await runInThisThread(env, {
      checkpointing: { dir: tempDir(), intervalMs: 30 },
      restart: { kind: 'fixed-delay', attempts: 2, delayMs: 10 },
      log: (line) => logs.push(line),
    });
    expect(failAt.armed).toBe(false);
    expect(logs.some((l) => /restored from checkpoint [1-9]/.test(l))).toBe(true);
    const out = [...committed.values()].flat();
    expect(sorted(out)).toEqual(sorted(input.map((r) => r.data)));
  });
});
