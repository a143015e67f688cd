// A worker frozen (SIGSTOP) past its lease: the other takes its slot at a higher epoch. Resumed (SIGCONT), the
// zombie learns it lost the slot (lease-lost or fenced) and acks nothing more at its old epoch; the table is exact.
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { checkpointDirName, METADATA_FILE_NAME } from '../../lib/checkpoint/naming.ts';
import { decodeMetadata } from '../../lib/storage/metadata-codec.ts';
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
    // A slot w1 still holds: balancing may already have handed one of its first slots to w2.
    const slots = cluster.heldSlots('w1');
    expect(slots.length).toBeGreaterThan(0);
    const slot = slots.at(-1)!;
    const oldEpoch = cluster.workerEvents('slot-started', 'w1').filter((l) => l.event['slot'] === slot).at(-1)!.event['epoch'] as number;

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
    // No checkpoint completed since the take names the zombie's old epoch: its metadata lists the slot's task files
    // of the new owner's epoch or a later one (balancing may hand the slot back to w1, at a new epoch).
    const completedSince = cluster.coordinatorEvents('checkpoint-completed').filter((l) => l.at > takenAt).map((l) => l.event['checkpointId'] as number);
    expect(completedSince.length).toBeGreaterThan(0);
    let checked = 0;
    for (const id of completedSince) {
      const key = `totals/${checkpointDirName(id)}/${METADATA_FILE_NAME}`;
      const out = await (cluster.stack.s3.client as S3Client).send(new GetObjectCommand({ Bucket: 'sluice-dev', Key: key })).catch(() => undefined);
      if (out?.Body === undefined) continue; // discarded by retention since
      const metadata = decodeMetadata(await out.Body.transformToByteArray(), key, id);
      const ofSlot = metadata.tasks.filter((t) => t.task.subtask === slot);
      expect(ofSlot.length, `checkpoint ${id} lists the slot's tasks`).toBeGreaterThan(0);
      for (const handle of ofSlot) {
        const epoch = Number(/-e(\d+)\.state$/.exec(handle.path)?.[1]);
        expect(epoch, `checkpoint ${id}: ${handle.path}`).toBeGreaterThanOrEqual(newEpoch);
      }
      checked += 1;
    }
    expect(checked).toBeGreaterThan(0);
    const exits = await cluster.stop();
    expect(exits['w1']).toEqual({ code: 0, signal: null });
    expect(exits['w2']).toEqual({ code: 0, signal: null });
  });
});
