// A worker frozen (SIGSTOP) past its lease: the other takes its slot at a higher epoch. Resumed (SIGCONT), the
// zombie learns it lost the slot (lease-lost or fenced) and acks nothing more at its old epoch; the table is exact.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ControlKeys, jobPartition, type AckItem } from '../../lib/cluster/control-items.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, generateTransactions, referenceTotals, tableDifferences, waitUntil } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  return waitUntil(what, condition, timeoutMs).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${cluster.describe()}`);
  });
}

describe('local cluster, a worker stopped past its lease', () => {
  it('learns it lost the slot when it runs again; no completed checkpoint counts an ack of its old epoch', async () => {
    const batches = [1, 2].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w1 = cluster.startWorker('w1');
    cluster.startWorker('w2');
    await until('both workers to run a slot', () => ['w1', 'w2'].every((id) => cluster.workerEvents('slot-started', id).length > 0), 60_000);
    await until('a checkpoint acked by both', () => ['w1', 'w2'].every((id) => cluster.workerEvents('ack', id).length > 0), 60_000);
    const last = cluster.workerEvents('slot-started', 'w1').at(-1)!.event;
    const slot = last['slot'] as number;
    const oldEpoch = last['epoch'] as number;

    w1.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await until(
      'w2 to take the frozen worker\'s slot',
      () => cluster.workerEvents('slot-started', 'w2').some((l) => l.at > stoppedAt && l.event['slot'] === slot),
      60_000,
    );
    const takenAt = cluster.workerEvents('slot-started', 'w2').find((l) => l.at > stoppedAt && l.event['slot'] === slot)!.at;
    const newEpoch = cluster.workerEvents('slot-started', 'w2').find((l) => l.at > stoppedAt && l.event['slot'] === slot)!.event['epoch'] as number;
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    await cluster.feed(batches[1]!);

    const resumedAt = Date.now();
    w1.child.kill('SIGCONT');
    await until(
      'the zombie to learn it lost the slot',
      () => cluster.workerEvents(undefined, 'w1').some((l) => l.at >= resumedAt && ['lease-lost', 'fenced'].includes(l.event['event'] as string) && l.event['slot'] === slot),
      60_000,
    );
    let diff: string[] = [];
    await until(
      'the table to equal the reference',
      async () => {
        diff = tableDifferences(referenceTotals(batches.flat()), await cluster.table());
        return diff.length === 0;
      },
      60_000,
    );
    expect(diff).toEqual([]);
    // Nothing the zombie did after it ran again was an ack at its old epoch.
    const lateAcks = cluster.workerEvents('ack', 'w1').filter((l) => l.at >= resumedAt && l.event['slot'] === slot && l.event['epoch'] === oldEpoch);
    expect(lateAcks).toEqual([]);
    // No checkpoint completed since the take counts an ack of the zombie's old epoch for the slot (the ack the
    // coordinator read the slot's task files and committables from).
    const completedSince = cluster.coordinatorEvents('checkpoint-completed').filter((l) => l.at > takenAt).map((l) => l.event['checkpointId'] as number);
    expect(completedSince.length).toBeGreaterThan(0);
    for (const id of completedSince) {
      const out = await cluster.stack.dynamodb.client.send(
        new GetItemCommand({ TableName: 'sluice-control', Key: { pk: { S: jobPartition(cluster.jobId) }, sk: { S: ControlKeys.ack(id, slot) } }, ConsistentRead: true }),
      );
      const ack = unmarshall(out.Item!) as AckItem;
      // The new owner's epoch or a later one (balancing may hand the slot back to w1, at a new epoch), never the
      // zombie's old one.
      expect(ack.epoch, `ack of checkpoint ${id} by ${ack.owner}`).toBeGreaterThanOrEqual(newEpoch);
    }
    const exits = await cluster.stop();
    expect(exits['w1']).toEqual({ code: 0, signal: null });
    expect(exits['w2']).toEqual({ code: 0, signal: null });
  });
});
