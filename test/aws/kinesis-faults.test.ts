import {
  ExpiredIteratorException,
  LimitExceededException,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { StreamEnvironment, WatermarkStrategy, collectSink, runInThisThread, systemClock } from '../../lib/index.ts';
import { InvalidTimestampError } from '../../lib/core/index.ts';
import type { DeadLetter } from '../../lib/connectors/aws/dead-letter.ts';
import {
  KinesisSourceError,
  kinesisDeadLetterWriter,
  kinesisSource,
  type KinesisApi,
  type KinesisSourceOptions,
} from '../../lib/connectors/aws/kinesis/index.ts';
import { putRecords, readStream } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator, type NumberedEvent } from '../harness/aws/kinesis-test-setup.ts';

type Event = NumberedEvent;

const kinesis = useKinesisEmulator();
const newStream = (prefix: string, shards: number) => kinesis.newStream(prefix, shards);
const events = (count: number, keys: number) => numberedEvents(count, keys);

async function runToIdle(options: KinesisSourceOptions<Event>): Promise<Event[]> {
  const env = new StreamEnvironment({ parallelism: 1 });
  const sink = collectSink<Event>();
  env.fromSource(kinesisSource<Event>(options)).sinkTo(sink);
  await runInThisThread(env, { log: () => {} });
  return sink.values;
}

function expectInOrder(got: Event[], input: { data: Event }[]): void {
  expect(got).toHaveLength(input.length);
  const last = new Map<string, number>();
  for (const e of got) {
    expect(e.n).toBe((last.get(e.k) ?? -1) + 1);
    last.set(e.k, e.n);
  }
}

const meta = { $metadata: {} };

describe('kinesis source under throttling and expiring iterators', () => {
  it('retries throttled GetRecords, GetShardIterator and ListShards calls and loses nothing', async () => {
    const stream = await newStream('throttled', 2);
    const input = events(300, 6);
    await putRecords(kinesis.client, stream, input);
    const thrown = { getRecords: 0, getShardIterator: 0, listShards: 0 };
    let calls = 0;
    const iteratorCalls = new Set<string>();
    const api: KinesisApi = {
      ...kinesis.api,
      async getRecords(input, signal) {
        // Every other call is throttled, deterministically.
        if (++calls % 2 === 0) {
          thrown.getRecords++;
          throw new ProvisionedThroughputExceededException({ message: 'Rate exceeded for shard', ...meta });
        }
        return kinesis.api.getRecords(input, signal);
      },
      async getShardIterator(input, signal) {
        if (!iteratorCalls.has(input.ShardId as string)) {
          iteratorCalls.add(input.ShardId as string);
          thrown.getShardIterator++;
          throw new LimitExceededException({ message: 'Rate exceeded', ...meta });
        }
        return kinesis.api.getShardIterator(input, signal);
      },
      async listShards(input, signal) {
        if (thrown.listShards++ % 3 === 0) throw new LimitExceededException({ message: 'Rate exceeded', ...meta });
        return kinesis.api.listShards(input, signal);
      },
    };
    const got = await runToIdle({
      stream,
      client: () => api,
      startPosition: 'TRIM_HORIZON',
      reader: { type: 'polling', maxRecordsPerCall: 50 },
      retry: { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 2 },
      shardDiscoveryIntervalMs: 50,
      stopWhenIdleMs: 300,
    });
    expectInOrder(got, input);
    expect(thrown.getRecords).toBeGreaterThan(3);
    expect(thrown.getShardIterator).toBe(2);
    expect(thrown.listShards).toBeGreaterThan(1);
  });

  it('replaces an expired iterator after the last record fetched', async () => {
    const stream = await newStream('expired', 1);
    const input = events(150, 4);
    await putRecords(kinesis.client, stream, input);
    let calls = 0;
    const iterators: string[] = [];
    const api: KinesisApi = {
      ...kinesis.api,
      async getRecords(input, signal) {
        if (++calls === 2 || calls === 4) throw new ExpiredIteratorException({ message: 'Iterator expired', ...meta });
        return kinesis.api.getRecords(input, signal);
      },
      async getShardIterator(input, signal) {
        iterators.push(`${input.ShardIteratorType}${input.StartingSequenceNumber === undefined ? '' : ' after'}`);
        return kinesis.api.getShardIterator(input, signal);
      },
    };
    const got = await runToIdle({
      stream,
      client: () => api,
      startPosition: 'TRIM_HORIZON',
      reader: { type: 'polling', maxRecordsPerCall: 50 },
      stopWhenIdleMs: 300,
    });
    expectInOrder(got, input);
    expect(iterators).toEqual(['TRIM_HORIZON', 'AFTER_SEQUENCE_NUMBER after', 'AFTER_SEQUENCE_NUMBER after']);
  });

  it('fails with a typed error when a call fails in a way retries cannot fix', async () => {
    const stream = await newStream('denied', 1);
    const api: KinesisApi = {
      ...kinesis.api,
      getShardIterator: async () => {
        throw Object.assign(new Error('User is not authorized to perform: kinesis:GetShardIterator'), { name: 'AccessDeniedException', $fault: 'client' });
      },
    };
    const source = kinesisSource<Event>({ stream, client: () => api, startPosition: 'TRIM_HORIZON' });
    const reader = source.createReader(await source.createSplits({ parallelism: 1 }), {
      subtask: 0,
      parallelism: 1,
      clock: systemClock,
      signal: new AbortController().signal,
    });
    let error: unknown;
    try {
      for (let i = 0; i < 100 && error === undefined; i++) {
        const r = await reader.poll(10);
        if (r.kind === 'wait') await new Promise((res) => setTimeout(res, r.retryAfterMs));
      }
    } catch (e) {
      error = e;
    } finally {
      await reader.close();
    }
    expect(error).toBeInstanceOf(KinesisSourceError);
    expect((error as KinesisSourceError).shardId).toBe('shardId-000000000000');
    expect((error as KinesisSourceError).retriable).toBe(false);
    expect((error as Error).message).toMatch(/AccessDeniedException.*not authorized/);
  });
});

describe('kinesis source dead letters', () => {
  it('sends records that fail to deserialize to a dead-letter stream and goes on', async () => {
    const stream = await newStream('with-bad', 2);
    const dlq = await newStream('dlq', 1);
    const good = events(60, 3);
    const bad = [
      { key: 'k0', data: Buffer.from('{"k": "k0", "n": oops') },
      { key: 'k1', data: new Uint8Array([0xff, 0xfe, 0x7b]) },
    ];
    const mixed = [...good.slice(0, 20), bad[0]!, ...good.slice(20, 45), bad[1]!, ...good.slice(45)];
    const placed = await putRecords(kinesis.client, stream, mixed);
    const badAt = [mixed.indexOf(bad[0]!), mixed.indexOf(bad[1]!)].map((i) => placed[i]!);

    const got = await runToIdle({
      stream,
      clientConfig: kinesis.emu.clientConfig,
      startPosition: 'TRIM_HORIZON',
      deadLetters: () => kinesisDeadLetterWriter({ stream: dlq, clientConfig: kinesis.emu.clientConfig }),
      stopWhenIdleMs: 400,
    });
    expectInOrder(got, good);
    const letters = (await readStream(kinesis.client, dlq)).map((r) => JSON.parse(Buffer.from(r.record.Data!).toString('utf8')) as DeadLetter);
    expect(letters.map((l) => [l.shardId, l.sequenceNumber]).sort()).toEqual(badAt.map((b) => [b.shardId, b.sequenceNumber]).sort());
    for (const letter of letters) {
      const original = bad.find((b) => b.key === letter.partitionKey)!;
      expect(Buffer.from(letter.data, 'base64')).toEqual(Buffer.from(original.data));
      expect(letter.source).toBe(stream);
      expect(letter.reason.length).toBeGreaterThan(0);
      expect(letter.approximateArrivalTimestamp).toBeGreaterThan(0);
    }
  });

  it('a custom deserializer rejects records by throwing; without a dead-letter target they are skipped and logged', async () => {
    const stream = await newStream('validated', 1);
    const input = events(40, 2);
    await putRecords(kinesis.client, stream, input);
    const logs: string[] = [];
    const got = await runToIdle({
      stream,
      clientConfig: kinesis.emu.clientConfig,
      startPosition: 'TRIM_HORIZON',
      deserializer: (data, info) => {
        const e = JSON.parse(Buffer.from(data).toString('utf8')) as Event;
        if (e.n % 5 === 4) throw new Error(`n=${e.n} of ${info.partitionKey} is not allowed`);
        return e;
      },
      log: (line) => logs.push(line),
      stopWhenIdleMs: 300,
    });
    expect(got.map((e) => `${e.k}#${e.n}`).sort()).toEqual(
      input.filter((r) => r.data.n % 5 !== 4).map((r) => `${r.data.k}#${r.data.n}`).sort(),
    );
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/shardId-000000000000.*n=4 of k\d is not allowed/);
  });

  it('sends records whose assigned event timestamp is invalid to the dead-letter stream; without one the job fails', async () => {
    const stream = await newStream('bad-ts', 1);
    const dlq = await newStream('dlq-ts', 1);
    type Stamped = Event & { ts?: unknown };
    const good = events(30, 2).map((r, i) => ({ ...r, data: { ...r.data, ts: 1_000 + i } as Stamped }));
    const bad = [
      { key: 'k0', data: { k: 'k0', n: -1, ts: 1e300 } as Stamped },
      { key: 'k1', data: { k: 'k1', n: -2, ts: '1000' } as Stamped },
    ];
    const mixed = [...good.slice(0, 10), bad[0]!, ...good.slice(10, 20), bad[1]!, ...good.slice(20)];
    const placed = await putRecords(kinesis.client, stream, mixed);
    const badAt = bad.map((b) => placed[mixed.indexOf(b)]!);
    const run = async (deadLetters: KinesisSourceOptions<Stamped>['deadLetters']): Promise<Stamped[]> => {
      const env = new StreamEnvironment({ parallelism: 1 });
      const sink = collectSink<Stamped>();
      const strategy = WatermarkStrategy.forMonotonousTimestamps<Stamped>().withTimestampAssigner((e) => e.ts as number);
      env
        .fromSource(kinesisSource<Stamped>({ stream, clientConfig: kinesis.emu.clientConfig, startPosition: 'TRIM_HORIZON', deadLetters, stopWhenIdleMs: 400 }), strategy)
        .sinkTo(sink);
      await runInThisThread(env, { log: () => {} });
      return sink.values;
    };

    const got = await run(() => kinesisDeadLetterWriter({ stream: dlq, clientConfig: kinesis.emu.clientConfig }));
    expect(got.map((e) => `${e.k}#${e.n}`).sort()).toEqual(good.map((r) => `${r.data.k}#${r.data.n}`).sort());
    const letters = (await readStream(kinesis.client, dlq)).map((r) => JSON.parse(Buffer.from(r.record.Data!).toString('utf8')) as DeadLetter);
    expect(letters.map((l) => l.sequenceNumber)).toEqual(badAt.map((b) => b.sequenceNumber));
    expect(letters.map((l) => JSON.parse(Buffer.from(l.data, 'base64').toString('utf8')) as unknown)).toEqual(bad.map((b) => b.data));
    expect(letters[0]!.reason).toMatch(/event timestamp 1e\+300 is outside the range of dates/);
    expect(letters[1]!.reason).toMatch(/event timestamp "1000" is a string/);

    const failure = (await run(undefined).catch((err: unknown) => err)) as Error;
    expect(failure.cause).toBeInstanceOf(InvalidTimestampError);
    expect((failure.cause as Error).message).toMatch(/record from split shardId-000000000000 offset 10: event timestamp 1e\+300/);
  });
});
