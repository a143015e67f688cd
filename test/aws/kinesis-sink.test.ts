import { ProvisionedThroughputExceededException } from '@aws-sdk/client-kinesis';
import type { PutRecordsInput, PutRecordsOutput, PutRecordsResultEntry } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { StreamEnvironment, runInThisThread } from '../../lib/index.ts';
import type { SinkContext } from '../../lib/connectors/sink.ts';
import { KinesisSinkError, kinesisSink, type KinesisApi } from '../../lib/connectors/aws/kinesis/index.ts';
import { readStream } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator } from '../harness/aws/kinesis-test-setup.ts';

interface Event {
  k: string;
  n: number;
  pad?: string;
}

const kinesis = useKinesisEmulator();
const newStream = (shards: number) => kinesis.newStream('sink', shards);
const events = (count: number, keys: number): Event[] => numberedEvents(count, keys).map((e) => e.data);

async function streamValues(stream: string): Promise<{ value: Event; key: string }[]> {
  return (await readStream(kinesis.client, stream)).map((r) => ({
    value: JSON.parse(Buffer.from(r.record.Data!).toString('utf8')) as Event,
    key: r.record.PartitionKey as string,
  }));
}

const ids = (values: Event[]) => values.map((e) => `${e.k}#${e.n}`).sort();
const ctx: SinkContext = { subtask: 0, parallelism: 1, operatorName: 'kinesis-test', fencing: { attempt: 0, epoch: 0 }, checkpointing: true };
const meta = { $metadata: {} };

describe('kinesis sink', () => {
  it('retries only the entries a PutRecords call rejected, until every record is written once', async () => {
    const stream = await newStream(2);
    const input = events(1200, 10);
    const calls: { size: number; retried: number }[] = [];
    const failedOnce = new Set<string>();
    let call = 0;
    const api: KinesisApi = {
      ...kinesis.api,
      // Rejects every third entry of the first calls (throttled or internal failure), writing only the rest.
      async putRecords(req: PutRecordsInput, signal): Promise<PutRecordsOutput> {
        const entries = req.Records ?? [];
        const id = (i: number) => Buffer.from(entries[i]!.Data!).toString('utf8');
        calls.push({ size: entries.length, retried: entries.filter((_, i) => failedOnce.has(id(i))).length });
        if (++call > 4) return kinesis.api.putRecords(req, signal);
        const reject = entries.map((_, i) => i % 3 === 1);
        const accepted = await kinesis.api.putRecords({ ...req, Records: entries.filter((_, i) => !reject[i]) }, signal);
        const results: PutRecordsResultEntry[] = [];
        let next = 0;
        entries.forEach((_, i) => {
          if (!reject[i]) return void results.push(accepted.Records![next++]!);
          failedOnce.add(id(i));
          results.push(
            i % 2 === 0
              ? { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded for shard' }
              : { ErrorCode: 'InternalFailure', ErrorMessage: 'Internal service failure.' },
          );
        });
        return { FailedRecordCount: reject.filter(Boolean).length, Records: results };
      },
    };
    const env = new StreamEnvironment({ parallelism: 2, batchSize: 128 });
    env
      .fromCollection(input)
      .sinkTo(kinesisSink<Event>({ stream, partitionKey: (e) => e.k, client: () => api, retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
    const dir = kinesis.tempDir('sluice-kinesis-sink-');
    await runInThisThread(env, { checkpointing: { dir, intervalMs: 20 }, log: () => {} });

    const written = await streamValues(stream);
    expect(ids(written.map((w) => w.value))).toEqual(ids(input));
    for (const w of written) expect(w.key).toBe(w.value.k);
    expect(failedOnce.size).toBeGreaterThan(100);
    // Retries carried only failed entries: some calls consisted of them alone.
    expect(calls.some((c) => c.retried > 0 && c.retried === c.size)).toBe(true);
    for (const c of calls) expect(c.size).toBeLessThanOrEqual(500);
  });

  it('a checkpoint (prepareCommit) returns only once everything written before it is acknowledged', async () => {
    const stream = await newStream(1);
    const writer = await kinesisSink<Event>({ stream, partitionKey: (e) => e.k, clientConfig: kinesis.emu.clientConfig, lingerMs: 60_000 }).createWriter(ctx);
    try {
      await writer.write({ values: events(10, 2), timestamps: new Array<number>(10).fill(0) });
      expect(await streamValues(stream)).toHaveLength(0);
      expect(await writer.prepareCommit(1)).toEqual([]);
      expect(ids((await streamValues(stream)).map((w) => w.value))).toEqual(ids(events(10, 2)));
    } finally {
      await writer.close?.();
    }
  });

  it('cuts calls at 500 records and 5 MiB', async () => {
    const sizes: { n: number; bytes: number }[] = [];
    const api: KinesisApi = {
      ...kinesis.api,
      async putRecords(req) {
        const entries = req.Records ?? [];
        sizes.push({ n: entries.length, bytes: entries.reduce((s, e) => s + e.Data!.byteLength + e.PartitionKey!.length, 0) });
        return { FailedRecordCount: 0, Records: entries.map(() => ({ SequenceNumber: '1', ShardId: 'shardId-000000000000' })) };
      },
    };
    const writer = await kinesisSink<Event>({ stream: 's', partitionKey: (e) => e.k, client: () => api }).createWriter(ctx);
    const small = events(1234, 7);
    await writer.write({ values: small, timestamps: new Array<number>(small.length).fill(0) });
    const big = events(30, 3).map((e) => ({ ...e, pad: 'x'.repeat(400 * 1024) }));
    await writer.write({ values: big, timestamps: new Array<number>(big.length).fill(0) });
    await writer.prepareCommit(1);
    await writer.close?.();
    expect(sizes.reduce((s, c) => s + c.n, 0)).toBe(1264);
    expect(sizes.slice(0, 2).map((c) => c.n)).toEqual([500, 500]);
    for (const c of sizes) {
      expect(c.n).toBeLessThanOrEqual(500);
      expect(c.bytes).toBeLessThanOrEqual(5 * 1024 * 1024);
    }
    expect(sizes.filter((c) => c.bytes > 4 * 1024 * 1024).length).toBeGreaterThan(0);
  });

  it('keeps at most maxInFlightRequests calls in flight, and write waits for a free one', async () => {
    let active = 0;
    let peak = 0;
    let calls = 0;
    const api: KinesisApi = {
      ...kinesis.api,
      async putRecords(req) {
        active++;
        calls++;
        peak = Math.max(peak, active);
        await new Promise((r) => setTimeout(r, 5));
        active--;
        return { FailedRecordCount: 0, Records: (req.Records ?? []).map(() => ({ SequenceNumber: '1', ShardId: 'shardId-000000000000' })) };
      },
    };
    const writer = await kinesisSink<Event>({ stream: 's', partitionKey: (e) => e.k, client: () => api, maxBatchRecords: 10, maxInFlightRequests: 2 }).createWriter(ctx);
    const input = events(205, 5);
    await writer.write({ values: input, timestamps: new Array<number>(input.length).fill(0) });
    expect(active).toBeLessThanOrEqual(2);
    await writer.prepareCommit(1);
    await writer.close?.();
    expect(calls).toBe(21);
    expect(peak).toBe(2);
  });

  it('fails with typed errors: an entry error retries cannot fix, a record over 1 MiB, retries run out', async () => {
    const rejecting: KinesisApi = {
      ...kinesis.api,
      putRecords: async (req) => ({
        FailedRecordCount: 1,
        Records: (req.Records ?? []).map((_, i) =>
          i === 0 ? { ErrorCode: 'KMSAccessDeniedException', ErrorMessage: 'no access to key' } : { SequenceNumber: '1', ShardId: 'shardId-000000000000' },
        ),
      }),
    };
    const w1 = await kinesisSink<Event>({ stream: 's', partitionKey: (e) => e.k, client: () => rejecting }).createWriter(ctx);
    await w1.write({ values: events(3, 1), timestamps: [0, 0, 0] });
    const e1 = await Promise.resolve(w1.prepareCommit(1)).then(() => undefined, (e: unknown) => e);
    expect(e1).toBeInstanceOf(KinesisSinkError);
    expect((e1 as KinesisSinkError).errorCode).toBe('KMSAccessDeniedException');
    expect((e1 as KinesisSinkError).retriable).toBe(false);
    await w1.close?.();

    const w2 = await kinesisSink<Event>({ stream: 's', partitionKey: (e) => e.k, client: () => rejecting }).createWriter(ctx);
    expect(() => w2.write({ values: [{ k: 'a', n: 0, pad: 'x'.repeat(1024 * 1024) }], timestamps: [0] })).toThrow(
      expect.objectContaining({ name: 'KinesisSinkError', errorCode: 'RecordTooLarge' }),
    );
    expect(() => w2.write({ values: [{ k: '', n: 0 }], timestamps: [0] })).toThrow(/1 to 256 characters/);
    await w2.close?.();

    let attempts = 0;
    const failing: KinesisApi = {
      ...kinesis.api,
      putRecords: async () => {
        attempts++;
        throw Object.assign(new Error('We encountered an internal error'), { name: 'InternalFailureException', $fault: 'server' });
      },
    };
    const w3 = await kinesisSink<Event>({
      stream: 's',
      partitionKey: (e) => e.k,
      client: () => failing,
      retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 },
    }).createWriter(ctx);
    await w3.write({ values: events(2, 1), timestamps: [0, 0] });
    const e3 = await Promise.resolve(w3.prepareCommit(1)).then(() => undefined, (e: unknown) => e);
    expect(e3).toBeInstanceOf(KinesisSinkError);
    expect((e3 as KinesisSinkError).retriable).toBe(true);
    expect(attempts).toBe(3);
    await w3.close?.();
  });

  it('retries throttled calls without giving up', async () => {
    let throttles = 0;
    const written: string[] = [];
    const api: KinesisApi = {
      ...kinesis.api,
      async putRecords(req) {
        if (throttles < 12) {
          throttles++;
          throw new ProvisionedThroughputExceededException({ message: 'Rate exceeded', ...meta });
        }
        for (const r of req.Records ?? []) written.push(Buffer.from(r.Data!).toString('utf8'));
        return { FailedRecordCount: 0, Records: (req.Records ?? []).map(() => ({ SequenceNumber: '1', ShardId: 'shardId-000000000000' })) };
      },
    };
    const writer = await kinesisSink<Event>({
      stream: 's',
      partitionKey: (e) => e.k,
      client: () => api,
      retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 2 },
    }).createWriter(ctx);
    await writer.write({ values: events(5, 1), timestamps: new Array<number>(5).fill(0) });
    await writer.finish?.();
    await writer.close?.();
    expect(throttles).toBe(12);
    expect(written).toHaveLength(5);
  });
});
