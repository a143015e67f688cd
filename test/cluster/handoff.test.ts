// Balancing: w1 alone takes both slots; when w2 starts, w1 hands one over at its next completed checkpoint (state
// closed there). The workers share the state dir (as tasks on one EFS would), so w2 reopens w1's database instead
// of downloading the checkpoint: its `slot-started` says restore "local". The table still equals the reference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, generateTransactions, referenceTotals, tableDifferences, waitUntil } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

/** waitUntil, with the cluster's log in the error. */
function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  return waitUntil(what, condition, timeoutMs).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${cluster.describe()}`);
  });
}

async function tableEquals(reference: ReturnType<typeof referenceTotals>, timeoutMs: number): Promise<void> {
  let last: string[] = [];
  await until(
    'the table to equal the reference',
    async () => {
      last = tableDifferences(reference, await cluster.table());
      return last.length === 0;
    },
    timeoutMs,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}`);
  });
}

describe('local cluster, a slot handed over to a new worker', () => {
  it('the new owner restores the slot from the shared state dir (local) and the table equals the reference', async () => {
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w1 = cluster.startWorker('w1');
    await until('w1 to run both slots', () => new Set(cluster.workerEvents('slot-started', 'w1').map((l) => l.event['slot'])).size === 2, 60_000);
    const bothRunning = Math.max(...cluster.workerEvents('slot-started', 'w1').map((l) => l.at));
    await until('a checkpoint of both slots to complete', () => cluster.coordinatorEvents('checkpoint-completed').some((l) => l.at > bothRunning), 60_000);
    await tableEquals(referenceTotals(batches[0]!), 60_000);

    await cluster.feed(batches[1]!);
    const w2 = cluster.startWorker('w2');
    await until('w2 to start a slot', () => cluster.workerEvents('slot-started', 'w2').length > 0, 60_000);
    const taken = cluster.workerEvents('slot-started', 'w2')[0]!;
    const slot = taken.event['slot'] as number;
    // Handed over gracefully (not lost and taken after the lease ran out), then reopened where w1 closed it.
    expect(cluster.workerEvents('released', 'w1').filter((l) => l.event['slot'] === slot).map((l) => l.event['to'])).toEqual(['w2']);
    expect(cluster.workerEvents('lease-lost')).toEqual([]);
    expect(taken.event).toMatchObject({ restore: 'local' });
    expect(taken.event['checkpointId']).toBeGreaterThan(0);
    // w1 keeps the other slot.
    const w1Slots = new Set(cluster.workerEvents('slot-started', 'w1').map((l) => l.event['slot']));
    expect(w1Slots.size).toBe(2);

    await cluster.feed(batches[2]!);
    await tableEquals(referenceTotals(batches.flat()), 60_000);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    expect(cluster.workerEvents('slot-started', 'w2')).toHaveLength(1);
    const exits = await cluster.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
    expect(w1.stderr.join('') + w2.stderr.join('')).toBe('');
  });
});
