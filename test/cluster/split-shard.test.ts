// SplitShard mid-run at a hash key inside a key group (on no slot or key-group boundary): one input shard read by
// both slots (P = 2) becomes a child that both slots overlap and a child of slot 1 only. Each slot follows the
// resharding on its own (its sub-splits of the children start after its sub-split of the parent ended) and the
// table equals the plain loop's totals exactly: nothing lost at the split, nothing read twice.
import { ListShardsCommand, SplitShardCommand, type Shard } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyGroupOfHashKey, kinesisHashKey } from '../../lib/core/index.ts';
import { LocalCluster, STREAM, generateTransactions, referenceTotals } from '../../scripts/cluster/local-cluster.ts';

const MAX_PARALLELISM = 128;
const ACCOUNTS = 40;

/**
 * Between the hash keys of two accounts of one key group (slot 1's if it has such a pair): the split then cuts a
 * key group, and both sides of the cut carry records of it. The accounts are a-0 ... a-39, hashed by MD5: fixed.
 */
function splitBetweenTwoAccounts(): { at: bigint; below: string; above: string } {
  const byGroup = new Map<number, { account: string; hash: bigint }[]>();
  for (let i = 0; i < ACCOUNTS; i++) {
    const account = `a-${i}`;
    const hash = kinesisHashKey(account);
    const group = keyGroupOfHashKey(hash, MAX_PARALLELISM);
    byGroup.set(group, [...(byGroup.get(group) ?? []), { account, hash }]);
  }
  const pairs = [...byGroup.entries()].filter(([, a]) => a.length >= 2).sort(([g1], [g2]) => g2 - g1);
  const [low, high] = pairs[0]![1].sort((a, b) => (a.hash < b.hash ? -1 : 1));
  return { at: low!.hash + 1n + (high!.hash - low!.hash - 1n) / 2n, below: low!.account, above: high!.account };
}

const SPLIT = splitBetweenTwoAccounts();
const SPLIT_AT = SPLIT.at;

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 1, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

async function shards(): Promise<Shard[]> {
  return (await cluster.stack.kinesisClient.send(new ListShardsCommand({ StreamName: STREAM }))).Shards ?? [];
}

describe('local cluster, SplitShard mid-run at a hash key off every boundary', () => {
  it('both slots follow the split and the table equals the reference', async () => {
    // Off the key-group (and so the slot) boundaries: the hash keys on both sides of the split share a key group.
    expect(keyGroupOfHashKey(SPLIT_AT - 1n, MAX_PARALLELISM)).toBe(keyGroupOfHashKey(SPLIT_AT, MAX_PARALLELISM));
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, ACCOUNTS, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w1 = cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    await cluster.until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => cluster.heldSlots(id).length === 1), 60_000);
    await cluster.untilTableEquals(referenceTotals(batches[0]!), 60_000);

    // Mid-stream: the parent still has unread records of the second batch when it closes.
    await cluster.feed(batches[1]!);
    const [parent] = await shards();
    await cluster.stack.kinesisClient.send(new SplitShardCommand({ StreamName: STREAM, ShardToSplit: parent!.ShardId!, NewStartingHashKey: SPLIT_AT.toString() }));
    await cluster.until('the split to finish', async () => (await shards()).filter((s) => s.ParentShardId === parent!.ShardId).length === 2, 30_000);
    const children = (await shards()).filter((s) => s.ParentShardId === parent!.ShardId);
    const put = await cluster.feed(batches[2]!);
    // The third batch went to both children; the two accounts of the cut key group to different ones.
    expect(new Set(put.map((p) => p.shardId))).toEqual(new Set(children.map((c) => c.ShardId)));
    const shardOf = (account: string): Set<string> => new Set(put.filter((_, i) => batches[2]![i]!.account === account).map((p) => p.shardId));
    expect(shardOf(SPLIT.below).size).toBe(1);
    expect(shardOf(SPLIT.above).size).toBe(1);
    expect([...shardOf(SPLIT.below)][0]).not.toBe([...shardOf(SPLIT.above)][0]);

    await cluster.untilTableEquals(referenceTotals(batches.flat()), 60_000);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    const exits = await cluster.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
    expect(w1.stderr.join('') + w2.stderr.join('')).toBe('');
  });
});
