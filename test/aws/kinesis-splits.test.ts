import type { Shard } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { awsClientConfig, configuredEndpoint } from '../../lib/connectors/aws/client-config.ts';
import { backoffDelay, compileRetry } from '../../lib/connectors/aws/kinesis/backoff.ts';
import { FinishAnnouncer } from '../../lib/connectors/aws/kinesis/finish-announcer.ts';
import { broadcastFinishedShardRegistry, kinesisSource, type FinishedShardRegistry } from '../../lib/connectors/aws/kinesis/index.ts';
import { ownerOfRoot, splitsFromListing } from '../../lib/connectors/aws/kinesis/shard-split.ts';
import { ConfigError } from '../../lib/index.ts';

const id = (n: number) => `shardId-${String(n).padStart(12, '0')}`;
const range = { StartingHashKey: '0', EndingHashKey: '1' };
const seq = { StartingSequenceNumber: '1' };

/** A stream of 3 shards: 0 split into 3 and 4, then 4 merged with 1 into 5, then 5 split into 6 and 7. */
const listing: Shard[] = [
  { ShardId: id(0), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(1), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(2), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(3), ParentShardId: id(0), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(4), ParentShardId: id(0), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(5), ParentShardId: id(4), AdjacentParentShardId: id(1), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(6), ParentShardId: id(5), HashKeyRange: range, SequenceNumberRange: seq },
  { ShardId: id(7), ParentShardId: id(5), HashKeyRange: range, SequenceNumberRange: seq },
];

describe('kinesis shard splits and owners', () => {
  it('roots follow first parents; a shard whose parent has expired is its own root', () => {
    const splits = splitsFromListing(listing, { type: 'TRIM_HORIZON' });
    expect(Object.fromEntries(splits.map((s) => [s.id, s.rootShardId]))).toEqual({
      [id(0)]: id(0),
      [id(1)]: id(1),
      [id(2)]: id(2),
      [id(3)]: id(0),
      [id(4)]: id(0),
      [id(5)]: id(0),
      [id(6)]: id(0),
      [id(7)]: id(0),
    });
    const expired = splitsFromListing(listing.slice(3), { type: 'LATEST' });
    expect(expired.find((s) => s.id === id(3))?.rootShardId).toBe(id(3));
    expect(expired.find((s) => s.id === id(7))?.rootShardId).toBe(id(4));
    for (const s of expired) {
      expect(s.position).toEqual({ type: 'LATEST' });
      expect(s.finished).toBe(false);
    }
    // Splits are plain data (they travel to worker threads and into checkpoints).
    expect(structuredClone(splits)).toEqual(splits);
  });

  it('children have their first parent owner at every parallelism, and first shards spread evenly', () => {
    const source = kinesisSource({ stream: 's', client: () => ({}) as never });
    const splits = splitsFromListing(listing, { type: 'TRIM_HORIZON' });
    const byId = new Map(splits.map((s) => [s.id, s]));
    for (let parallelism = 1; parallelism <= 7; parallelism++) {
      for (const s of splits) {
        const owner = source.subtaskOf(s, parallelism);
        expect(owner).toBeGreaterThanOrEqual(0);
        expect(owner).toBeLessThan(parallelism);
        if (s.parentShardId !== undefined) expect(owner).toBe(source.subtaskOf(byId.get(s.parentShardId)!, parallelism));
      }
    }
    const owners = Array.from({ length: 8 }, (_, n) => ownerOfRoot(id(n), 4));
    expect(owners).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    expect(ownerOfRoot('not-a-shard-id', 5)).toBe(ownerOfRoot('not-a-shard-id', 5));
  });

  it('refuses bad options with ConfigError', () => {
    expect(() => kinesisSource({ stream: '' })).toThrow(ConfigError);
    expect(() => kinesisSource({ stream: 's', reader: { type: 'polling', intervalMs: 100 } })).toThrow(/intervalMs/);
    expect(() => kinesisSource({ stream: 's', reader: { type: 'polling', maxRecordsPerCall: 20000 } })).toThrow(/maxRecordsPerCall/);
    expect(() => kinesisSource({ stream: 's', reader: { type: 'fan-out', consumerName: '' } })).toThrow(/consumerName/);
    expect(() => kinesisSource({ stream: 's', startPosition: { atTimestamp: Number.NaN } })).toThrow(/atTimestamp/);
    expect(() => kinesisSource({ stream: 's', stopWhenIdleMs: 0 })).toThrow(/stopWhenIdleMs/);
    expect(kinesisSource({ stream: 's', stopWhenIdleMs: 10 }).bounded).toBe(true);
    expect(kinesisSource({ stream: 's' }).bounded).toBe(false);
  });
});

function recordingRegistry(): FinishedShardRegistry & { announced: string[][] } {
  const announced: string[][] = [];
  return { announced, announce: (ids) => void announced.push([...ids]), isFinished: () => false, close() {} };
}

describe('finished-shard announcements', () => {
  it('with checkpoints: a finished shard is announced once a checkpoint holding it completes', async () => {
    const registry = recordingRegistry();
    const announcer = new FinishAnnouncer(registry, true);
    await announcer.restored([id(9)]);
    await announcer.finished(id(1));
    expect(registry.announced).toEqual([[id(9)]]);
    await announcer.checkpointComplete(4); // a checkpoint taken before the shard finished
    expect(registry.announced).toHaveLength(1);
    announcer.checkpointTaken(5);
    await announcer.finished(id(2));
    announcer.checkpointTaken(6);
    await announcer.checkpointComplete(5);
    expect(registry.announced).toEqual([[id(9)], [id(1)]]);
    await announcer.checkpointComplete(6);
    await announcer.checkpointComplete(7);
    expect(registry.announced).toEqual([[id(9)], [id(1)], [id(2)]]);
  });

  it('without checkpoints: announced when finished', async () => {
    const registry = recordingRegistry();
    const announcer = new FinishAnnouncer(registry, false);
    await announcer.finished(id(1));
    expect(registry.announced).toEqual([[id(1)]]);
  });

  it('the BroadcastChannel registry reaches readers that join late, and only those of the same attempt', async () => {
    const a = broadcastFinishedShardRegistry({ attemptTag: 'e1-a0', stream: 's', source: 'k', subtask: 0 });
    const other = broadcastFinishedShardRegistry({ attemptTag: 'e2-a0', stream: 's', source: 'k', subtask: 1 });
    await a.announce([id(1)]);
    const late = broadcastFinishedShardRegistry({ attemptTag: 'e1-a0', stream: 's', source: 'k', subtask: 1 });
    // Messages arrive asynchronously: wait for them (a generous bound, so a loaded machine cannot fail the test).
    const eventually = async (condition: () => boolean): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    };
    await eventually(() => late.isFinished(id(1)) === true);
    expect(late.isFinished(id(1))).toBe(true);
    expect(late.isFinished(id(2))).toBe(false);
    await late.announce([id(2)]);
    await eventually(() => a.isFinished(id(2)) === true);
    expect(a.isFinished(id(2))).toBe(true);
    // The other attempt's registry heard nothing, even after a message that reached the same attempt's readers.
    expect(other.isFinished(id(1))).toBe(false);
    for (const r of [a, other, late]) await r.close();
  });
});

describe('retry and client settings', () => {
  it('backoff is jittered below an exponential ceiling', () => {
    const policy = compileRetry('t', { baseDelayMs: 10, maxDelayMs: 100 });
    expect(backoffDelay(policy, 1, () => 0.999)).toBe(10);
    expect(backoffDelay(policy, 3, () => 0.999)).toBe(40);
    expect(backoffDelay(policy, 30, () => 0.999)).toBe(100);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
    expect(() => compileRetry('t', { maxAttempts: 0 })).toThrow(ConfigError);
  });

  it('takes endpoints from the SDK variables and uses HTTP/1.1 for emulators', () => {
    expect(configuredEndpoint('kinesis', { AWS_ENDPOINT_URL: 'http://a', AWS_ENDPOINT_URL_KINESIS: 'http://k' })).toBe('http://k');
    expect(configuredEndpoint('s3', { AWS_ENDPOINT_URL: 'http://a', AWS_ENDPOINT_URL_KINESIS: 'http://k' })).toBe('http://a');
    expect(configuredEndpoint('dynamodb', {})).toBeUndefined();
    const emulator = awsClientConfig('kinesis', { endpoint: 'http://127.0.0.1:1', region: 'us-east-1' });
    expect(emulator.requestHandler).toBeDefined();
    expect(emulator.endpoint).toBe('http://127.0.0.1:1');
    const saved = { ...process.env };
    try {
      delete process.env['AWS_ENDPOINT_URL'];
      delete process.env['AWS_ENDPOINT_URL_KINESIS'];
      const aws = awsClientConfig('kinesis');
      expect(aws).toEqual({}); // region, credentials, endpoint and HTTP/2 handler: the SDK's own defaults
      expect(awsClientConfig('dynamodb').requestHandler).toBeDefined();
    } finally {
      process.env = saved;
    }
  });
});
