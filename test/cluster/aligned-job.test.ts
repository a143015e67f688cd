// The aligned job (examples/cluster-account-totals.ts) on a whole local cluster: 2 `sluice worker` processes, P = 2,
// the coordinator's state machines in this process. The sink table must equal a plain loop's totals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, generateTransactions, referenceTotals, tableDifferences, waitUntil } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

describe('local cluster, aligned job', () => {
  it('two workers share the two slots and the table equals the reference, each record counted once', async () => {
    const first = generateTransactions(3000, 40, 1);
    await cluster.feed(first);
    cluster.startWorker('w1');
    cluster.startWorker('w2');
    // Both workers run a slot: balancing gives each ceil(2 / 2) = 1.
    await waitUntil('both workers to start a slot', () => ['w1', 'w2'].every((id) => cluster.workerEvents('slot-started', id).length > 0), 60_000);
    const second = generateTransactions(2000, 40, 2, Date.UTC(2026, 10, 2));
    await cluster.feed(second);
    const reference = referenceTotals([...first, ...second]);
    let last: string[] = [];
    await waitUntil(
      'the table to equal the reference',
      async () => {
        last = tableDifferences(reference, await cluster.table());
        return last.length === 0;
      },
      60_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}\n${cluster.describe()}`);
    });
    // Counts equal the reference exactly: a duplicate would have made some count too high.
    const slots = new Map(cluster.workerEvents('slot-started').map((l) => [l.event['slot'], l.source]));
    expect(slots.size).toBe(2);
    expect(new Set(slots.values()).size).toBe(2);
    expect(cluster.coordinatorEvents('checkpoint-completed').length).toBeGreaterThan(0);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    const exits = await cluster.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
  });
});
