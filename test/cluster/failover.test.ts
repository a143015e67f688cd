// A worker killed with SIGKILL mid-stream: the other takes its slot after the lease (3 s) and restores it from the
// last completed checkpoint; the table still equals the plain loop's totals exactly (nothing lost, nothing twice).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, generateTransactions, referenceTotals, tableDifferences, waitUntil } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

async function tableEquals(reference: ReturnType<typeof referenceTotals>, timeoutMs: number): Promise<void> {
  let last: string[] = [];
  await waitUntil(
    'the table to equal the reference',
    async () => {
      last = tableDifferences(reference, await cluster.table());
      return last.length === 0;
    },
    timeoutMs,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}\n${cluster.describe()}`);
  });
}

/** waitUntil, with the cluster's log in the error. */
function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  return waitUntil(what, condition, timeoutMs).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${cluster.describe()}`);
  });
}

describe('local cluster, a worker killed with SIGKILL', () => {
  it('the survivor takes the slot a lease later, restores it from the last completed checkpoint and the table equals the reference', async () => {
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    // Balanced (one slot each): w1 starts both and hands one over, so "a slot w1 started" is not yet "w1's slot".
    await until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => cluster.heldSlots(id).length === 1), 60_000);
    await tableEquals(referenceTotals(batches[0]!), 60_000);

    // Mid-stream: records of the second batch are being read (and some committed) when w1 dies.
    await cluster.feed(batches[1]!);
    const victimSlot = cluster.heldSlots('w1')[0]!;
    const killedAt = Date.now();
    cluster.workers.get('w1')!.child.kill('SIGKILL');
    await cluster.feed(batches[2]!);

    await until(
      'w2 to start the killed worker\'s slot',
      () => cluster.workerEvents('slot-started', 'w2').some((l) => l.at > killedAt && l.event['slot'] === victimSlot),
      60_000,
    );
    const takeover = cluster.workerEvents('slot-started', 'w2').find((l) => l.at > killedAt && l.event['slot'] === victimSlot)!;
    // From the last completed checkpoint: `local` when the killed worker's database on the shared state dir is
    // usable at it (its rows past the checkpoint are dropped), else from S3.
    expect(['s3', 'local']).toContain(takeover.event['restore']);
    expect(takeover.event['checkpointId']).toBeGreaterThan(0);
    // No wall-clock bound on when: the taker counts the lease from when it last saw the victim's counter move, up to a
    // renewal round before the kill, so the takeover may come sooner than a lease after it. The lease keeper's
    // timing is tested on manual clocks (test/aws/cluster-leases.test.ts).

    await tableEquals(referenceTotals(batches.flat()), 60_000);
    expect(cluster.workerEvents('lease-acquired', 'w2').some((l) => l.event['slot'] === victimSlot && l.at > killedAt)).toBe(true);
    const exits = await cluster.stop();
    expect(exits['w2']).toEqual({ code: 0, signal: null });
    expect(exits['w1']).toEqual({ code: null, signal: 'SIGKILL' });
    expect(w2.stderr.join('')).toBe('');
  });
});
