import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ClusterSinkConfig, SlotCommittablesRef } from '../../../lib/cluster/control-items.ts';
import { encodeSlotCommittables } from '../../../lib/cluster/slot-committables.ts';
import { commitCheckpointSinks } from '../../../lib/connectors/aws/cluster/checkpoint-sink-commits.ts';
import { DEFAULT_SINK_COMMIT_REGISTRY, SinkCommitRegistry } from '../../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { dynamoDbSink } from '../../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import { ConfigError } from '../../../lib/core/index.ts';

const client = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });

describe('DynamoDB sink externalCommit', () => {
  it('is plain JSON naming the committer and its marker settings, never the job code', () => {
    const sink = dynamoDbSink<number>({ table: 'orders', partitionKey: 'id', toWrites: () => null, jobId: 'j1', marker: { table: 'markers' } });
    const descriptor = sink.externalCommit;
    expect(descriptor).toMatchObject({ kind: 'dynamodb', table: 'orders', mode: 'transactional', jobId: 'j1', fenced: true });
    expect(descriptor?.['marker']).toMatchObject({ table: 'markers', partitionKey: 'pk', keyPrefix: '#sluice-commit#' });
    expect(JSON.parse(JSON.stringify(descriptor))).toEqual(descriptor);
  });
});

describe('SinkCommitRegistry', () => {
  const sink = (kind: string): ClusterSinkConfig => ({ nodeId: 3, name: 'out', externalCommit: { kind } });

  it('builds the DynamoDB committer from the descriptor', () => {
    const descriptor = dynamoDbSink<number>({ table: 'orders', partitionKey: 'id', toWrites: () => null }).externalCommit;
    const committer = DEFAULT_SINK_COMMIT_REGISTRY.committerFor({ nodeId: 1, name: 'orders', externalCommit: descriptor as ClusterSinkConfig['externalCommit'] }, { dynamoDbClient: client });
    expect(typeof committer.commit).toBe('function');
  });

  it('refuses an unknown kind, naming the sink and the kinds known', () => {
    expect(() => DEFAULT_SINK_COMMIT_REGISTRY.committerFor(sink('kafka'), { dynamoDbClient: client })).toThrow(ConfigError);
    expect(() => DEFAULT_SINK_COMMIT_REGISTRY.committerFor(sink('kafka'), { dynamoDbClient: client })).toThrow(/"out".*kafka.*known: dynamodb/);
  });

  it('refuses a dynamodb descriptor without its settings', () => {
    expect(() => DEFAULT_SINK_COMMIT_REGISTRY.committerFor(sink('dynamodb'), { dynamoDbClient: client })).toThrow(/lacks table/);
  });
});

describe('commitCheckpointSinks', () => {
  const sinks: ClusterSinkConfig[] = [
    { nodeId: 1, name: 'a', externalCommit: { kind: 'memory' } },
    { nodeId: 2, name: 'b', externalCommit: { kind: 'memory' } },
  ];

  function objects(id: number): { refs: SlotCommittablesRef[]; files: Map<string, Uint8Array> } {
    const files = new Map<string, Uint8Array>();
    const refs: SlotCommittablesRef[] = [];
    for (const slot of [0, 1]) {
      const bytes = encodeSlotCommittables({ version: 1, checkpointId: id, slot, epoch: 1, sinks: [{ nodeId: 1, committables: [`a${slot}`] }, { nodeId: 2, committables: [] }] });
      const path = `chk-${id}/committables-${slot}-e1.json`;
      files.set(path, bytes);
      refs.push({ path, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') });
    }
    return { refs, files };
  }

  it('hands each sink its committables of every slot, slot order', async () => {
    const { refs, files } = objects(4);
    const seen: [string, unknown[]][] = [];
    const registry = new SinkCommitRegistry({ memory: () => ({ commit: async (c) => void seen.push(['x', [...c]]) }) });
    const handed = await commitCheckpointSinks(4, refs, sinks, (s) => registry.committerFor(s, { dynamoDbClient: client }), async (p) => files.get(p));
    expect(handed).toBe(2);
    expect(seen).toEqual([['x', ['a0', 'a1']]]);
  });

  it('refuses an object that differs from what its slot acknowledged, or belongs to another checkpoint', async () => {
    const { refs, files } = objects(4);
    const committer = () => ({ commit: async () => undefined });
    const tampered = new Map(files);
    tampered.set(refs[0]!.path, new TextEncoder().encode('{}'));
    await expect(commitCheckpointSinks(4, refs, sinks, committer, async (p) => tampered.get(p))).rejects.toThrow(/differs from what its slot acknowledged/);
    await expect(commitCheckpointSinks(5, refs, sinks, committer, async (p) => files.get(p))).rejects.toThrow(/checkpoint 4, not 5/);
    await expect(commitCheckpointSinks(4, refs, sinks, committer, async () => undefined)).rejects.toThrow(/missing/);
  });
});
