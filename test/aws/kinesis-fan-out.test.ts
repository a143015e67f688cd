import { LimitExceededException, ResourceInUseException } from '@aws-sdk/client-kinesis';
import type { _Record, Shard, StartingPosition, SubscribeToShardEventStream } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/index.ts';
import { kinesisSource, type KinesisApi } from '../../lib/connectors/aws/kinesis/index.ts';

// kinesalite has no enhanced fan-out (RegisterStreamConsumer, SubscribeToShard): the fan-out reader is tested
// against this scripted client instead, which follows the API's documented behaviour.

interface Event {
  k: string;
  n: number;
}

const STREAM_ARN = 'arn:aws:kinesis:us-east-1:123456789012:stream/orders';
const CONSUMER_ARN = `${STREAM_ARN}/consumer/sluice:1`;
const parent = 'shardId-000000000000';
const child = 'shardId-000000000001';
const meta = { $metadata: {} };

function record(n: number, k = 'a'): _Record {
  return {
    SequenceNumber: `${1000 + n}`,
    Data: Buffer.from(JSON.stringify({ k, n })),
    PartitionKey: k,
    ApproximateArrivalTimestamp: new Date(1_700_000_000_000 + n),
  };
}

function event(records: _Record[], continuation: string | undefined): SubscribeToShardEventStream {
  return {
    SubscribeToShardEvent: {
      Records: records,
      ContinuationSequenceNumber: continuation,
      MillisBehindLatest: 0,
      ...(continuation === undefined ? { ChildShards: [{ ShardId: child, ParentShards: [parent], HashKeyRange: undefined }] } : {}),
    },
  };
}

/** One subscription's events; `hold` keeps it open (as a live subscription with no new data would stay). */
async function* subscription(events: SubscribeToShardEventStream[], hold = false): AsyncGenerator<SubscribeToShardEventStream> {
  for (const e of events) yield e;
  if (hold) await new Promise(() => {});
}

interface Subscribe {
  shardId: string;
  position: StartingPosition;
  at: number;
}

function fakeFanOutApi(log: { subscribes: Subscribe[]; calls: string[] }): KinesisApi {
  const shards: Shard[] = [
    { ShardId: parent, HashKeyRange: { StartingHashKey: '0', EndingHashKey: '9' }, SequenceNumberRange: { StartingSequenceNumber: '1000', EndingSequenceNumber: '1999' } },
    { ShardId: child, ParentShardId: parent, HashKeyRange: { StartingHashKey: '0', EndingHashKey: '9' }, SequenceNumberRange: { StartingSequenceNumber: '2000' } },
  ];
  let parentSubscriptions = 0;
  let describes = 0;
  const unexpected = (name: string) => async () => {
    throw new Error(`unexpected ${name}`);
  };
  return {
    listShards: async () => ({ Shards: shards }),
    describeStreamSummary: async () => {
      log.calls.push('describeStreamSummary');
      return {
        StreamDescriptionSummary: {
          StreamName: 'orders',
          StreamARN: STREAM_ARN,
          StreamStatus: 'ACTIVE',
          RetentionPeriodHours: 24,
          StreamCreationTimestamp: new Date(0),
          EnhancedMonitoring: [],
          OpenShardCount: 1,
        },
      };
    },
    registerStreamConsumer: async (input) => {
      log.calls.push(`register ${input.ConsumerName} on ${input.StreamARN}`);
      // Another reader registered it first.
      throw new ResourceInUseException({ message: 'Consumer sluice exists', ...meta });
    },
    describeStreamConsumer: async () => {
      log.calls.push('describeStreamConsumer');
      describes++;
      return {
        ConsumerDescription: {
          ConsumerName: 'sluice',
          ConsumerARN: CONSUMER_ARN,
          ConsumerStatus: describes === 1 ? 'CREATING' : 'ACTIVE',
          ConsumerCreationTimestamp: new Date(0),
          StreamARN: STREAM_ARN,
        },
      };
    },
    subscribeToShard: async (input) => {
      expect(input.ConsumerARN).toBe(CONSUMER_ARN);
      log.subscribes.push({ shardId: input.ShardId as string, position: input.StartingPosition as StartingPosition, at: Date.now() });
      if (input.ShardId === parent) {
        parentSubscriptions++;
        // 1: two events, then the subscription's 5 minutes are over. 2: throttled. 3: the rest, then the shard ends.
        if (parentSubscriptions === 1) return { EventStream: subscription([event([record(1), record(2), record(3)], '1003'), event([record(4)], '1004')]) };
        if (parentSubscriptions === 2) throw new LimitExceededException({ message: 'Rate exceeded for consumer', ...meta });
        return { EventStream: subscription([event([], '1004'), event([record(5), record(6)], undefined)]) };
      }
      // Records, then an empty event (caught up), then a subscription that stays open without news.
      return { EventStream: subscription([event([record(101, 'b'), record(102, 'b')], '2002'), event([], '2002')], true) };
    },
    getShardIterator: unexpected('GetShardIterator'),
    getRecords: unexpected('GetRecords'),
    putRecords: unexpected('PutRecords'),
  };
}

describe('kinesis source with enhanced fan-out (scripted client)', () => {
  it('registers or finds the consumer, resubscribes after the last record, and reads a child after its parent', async () => {
    const log = { subscribes: [] as Subscribe[], calls: [] as string[] };
    const api = fakeFanOutApi(log);
    const source = kinesisSource<Event>({
      stream: 'orders',
      client: () => api,
      startPosition: 'TRIM_HORIZON',
      reader: { type: 'fan-out', consumerName: 'sluice' },
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      shardDiscoveryIntervalMs: 20,
      stopWhenIdleMs: 500,
    });
    const splits = await source.createSplits({ parallelism: 1 });
    expect(splits.map((s) => [s.id, s.rootShardId])).toEqual([
      [parent, parent],
      [child, parent],
    ]);
    const reader = source.createReader(splits, { subtask: 0, parallelism: 1, clock: systemClock, signal: new AbortController().signal });
    const values: Event[] = [];
    const finished: string[] = [];
    let parentEndAt = 0;
    try {
      for (;;) {
        const r = await reader.poll(100);
        if (r.kind === 'end') break;
        if (r.kind === 'wait') {
          await new Promise((res) => setTimeout(res, r.retryAfterMs));
          continue;
        }
        values.push(...r.batch.values);
        for (const id of r.finishedSplits ?? []) {
          finished.push(id);
          if (id === parent) parentEndAt = Date.now();
        }
      }
      expect(reader.currentSplits().map((s) => [s.id, s.finished, s.position])).toEqual([
        [parent, true, { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '1006' }],
        [child, false, { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '1102' }],
      ]);
    } finally {
      await reader.close();
    }
    expect(values.map((e) => `${e.k}${e.n}`)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'b101', 'b102']);
    expect(finished).toEqual([parent]);
    expect(log.calls.slice(0, 4)).toEqual([
      'describeStreamSummary',
      `register sluice on ${STREAM_ARN}`,
      'describeStreamConsumer',
      'describeStreamConsumer',
    ]);
    const after1004 = { Type: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: '1004' };
    expect(log.subscribes.map((s) => [s.shardId, s.position])).toEqual([
      [parent, { Type: 'TRIM_HORIZON' }],
      [parent, after1004],
      [parent, after1004],
      [child, { Type: 'TRIM_HORIZON' }],
    ]);
    const [first, second] = log.subscribes;
    // At most one SubscribeToShard per second and shard; the child only once its parent ended.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(990);
    expect(log.subscribes[3]!.at).toBeGreaterThanOrEqual(parentEndAt);
    expect(reader.counters.throttled).toBe(1);
  });
});
