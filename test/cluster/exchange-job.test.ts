// The exchange job (examples/cluster-merchant-totals.ts: totals per merchant from a stream partitioned by account,
// so the keyBy crosses slots through an internal Kinesis stream of P shards, read-committed) on a local cluster of 2
// `sluice worker` processes. One is killed with SIGKILL mid-stream: the survivor restores its slot (producer and
// receiver of the exchange) from the last completed checkpoint at a new epoch, and the table still equals the plain
// loop's totals, no record lost or counted twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LocalCluster,
  generateTransactions,
  referenceMerchantTotals,
  tableDifferences,
  waitUntil,
  withMerchants,
  type Totals,
} from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000, exchange: true });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

/** Every row seen above the final reference: a committed duplicate (sums only grow, so it would stay too). */
const overshoots: string[] = [];

async function tableEquals(reference: ReadonlyMap<string, Totals>, final: ReadonlyMap<string, Totals>, timeoutMs: number): Promise<void> {
  let last: string[] = [];
  await waitUntil(
    'the table to equal the reference',
    async () => {
      const table = await cluster.table();
      for (const [merchant, got] of table) {
        const most = final.get(merchant);
        if (most === undefined || got.count > most.count) overshoots.push(`${merchant}: ${JSON.stringify(got)}, at most ${JSON.stringify(most)}`);
      }
      last = tableDifferences(reference, table);
      return last.length === 0;
    },
    timeoutMs,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}\n${cluster.describe()}`);
  });
}

function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  return waitUntil(what, condition, timeoutMs).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${cluster.describe()}`);
  });
}

describe('local cluster, exchange job, a worker killed with SIGKILL', () => {
  it('the table equals the per-merchant reference with no duplicate', async () => {
    const batches = [1, 2, 3].map((seed) => withMerchants(generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)), 25));
    const final = referenceMerchantTotals(batches.flat());
    await cluster.feed(batches[0]!);
    cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    await until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => cluster.heldSlots(id).length === 1), 60_000);
    await tableEquals(referenceMerchantTotals(batches[0]!), final, 60_000);

    // Mid-stream: the second batch is being read, sent through the exchange and committed when w1 dies.
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
    await tableEquals(final, final, 60_000);
    expect(overshoots).toEqual([]);
    // Records of both source slots met in each merchant's slot: the exchange carried them.
    expect(cluster.coordinatorEvents('checkpoint-completed').length).toBeGreaterThan(2);
    const exits = await cluster.stop();
    expect(exits['w2']).toEqual({ code: 0, signal: null });
    expect(exits['w1']).toEqual({ code: null, signal: 'SIGKILL' });
    expect(w2.stderr.join('')).toBe('');
  });
});
