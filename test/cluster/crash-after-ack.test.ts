// A worker killed (SIGKILL, SLUICE_CRASH_AT after-ack) right after it put its ack item for a checkpoint, before it
// did anything else: the coordinator completes that checkpoint with the dead worker's ack, the survivor takes the
// slot a lease later and restores it from that checkpoint (or a later one), and the table equals the plain loop's
// totals exactly: nothing the dead slot read after its last ack is lost, nothing before it is counted twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, generateTransactions, referenceTotals } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

// The crashing worker's third ack: it has acked two checkpoints of its slot normally before.
const CRASH_AT = 3;

describe('local cluster, a worker killed right after its ack (after-ack)', () => {
  it('the checkpoint completes with the dead worker\'s ack, the survivor restores the slot from it and the table equals the reference', async () => {
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w2 = cluster.startWorker('w2');
    await cluster.until('w2 to run both slots', () => cluster.heldSlots('w2').length === 2, 60_000);
    const w1 = cluster.startWorker('w1', { env: { SLUICE_CRASH_AT: `after-ack:${CRASH_AT}` } });
    // Balancing hands w1 one of w2's slots; the crash comes at w1's third ack, so mid-stream.
    await cluster.until('w1 to run a slot', () => cluster.heldSlots('w1').length === 1, 60_000);
    const slot = cluster.heldSlots('w1')[0]!;
    await cluster.feed(batches[1]!);

    const exit = await w1.exited;
    const crashedAt = Date.now();
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(w1.stderr.join('')).toContain(`SLUICE_CRASH_AT after-ack:${CRASH_AT} reached`);
    // The acks before the crash were reported; the one the worker died after was put but never reported.
    const reported = cluster.workerEvents('ack', 'w1');
    expect(reported).toHaveLength(CRASH_AT - 1);
    const lastReported = Math.max(...reported.map((l) => l.event['checkpointId'] as number));
    await cluster.feed(batches[2]!);

    await cluster.until(
      'w2 to start the dead worker\'s slot',
      () => cluster.workerEvents('slot-started', 'w2').some((l) => l.at > crashedAt && l.event['slot'] === slot),
      60_000,
    );
    const takeover = cluster.workerEvents('slot-started', 'w2').find((l) => l.at > crashedAt && l.event['slot'] === slot)!;
    // A checkpoint after the last reported ack completed before the slot changed hands: only the unreported ack of
    // the dead worker can have acknowledged its slot there (it held the lease until the takeover).
    const completedWithDeadAck = cluster
      .coordinatorEvents('checkpoint-completed')
      .filter((l) => l.at <= takeover.at && (l.event['checkpointId'] as number) > lastReported)
      .map((l) => l.event['checkpointId'] as number);
    expect(completedWithDeadAck.length, cluster.describe()).toBeGreaterThan(0);
    // Restored from the newest checkpoint completed (never an older one: its sinks were committed).
    expect(takeover.event['checkpointId']).toBeGreaterThanOrEqual(Math.max(...completedWithDeadAck));
    expect(['s3', 'local']).toContain(takeover.event['restore']);

    await cluster.untilTableEquals(referenceTotals(batches.flat()), 60_000);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    const exits = await cluster.stop();
    expect(exits['w2']).toEqual({ code: 0, signal: null });
    expect(w2.stderr.join('')).toBe('');
  });
});
