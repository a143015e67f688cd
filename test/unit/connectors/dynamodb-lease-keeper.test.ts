import { describe, expect, it } from 'vitest';
import type { LeaseEvent } from '../../../lib/cluster/ports.ts';
import { DynamoDbLeaseKeeper } from '../../../lib/connectors/aws/cluster/dynamodb-lease-keeper.ts';
import { ManualClock } from '../../../lib/core/index.ts';
import { InMemoryLeaseTable } from '../../harness/in-memory-lease-table.ts';
import { ManualTimers } from '../../harness/manual-timers.ts';

const L = 3000;

/** Lets promise callbacks run; for moments when a round hangs on purpose and `settled` would wait for it. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

function setup(table = new InMemoryLeaseTable(), id = 'a') {
  const clock = new ManualClock(100_000);
  const timers = new ManualTimers(clock);
  const events: LeaseEvent[] = [];
  const keeper = new DynamoDbLeaseKeeper(table, { workerId: id, leaseDurationMs: L, slotCount: 2, clock, timers });
  keeper.start((event) => events.push(event));
  return { table, clock, timers, events, keeper };
}

describe('DynamoDbLeaseKeeper (in-memory table)', () => {
  it('stops a slot at 2/3 of the lease while its renewal hangs, without waiting for the round to finish', async () => {
    const { table, timers, events, keeper } = setup();
    timers.advance(0);
    await keeper.settled();
    expect(keeper.held().map((h) => h.slot)).toEqual([0, 1]);
    const release = table.hold('renewLease');
    timers.advance(L / 3); // a round starts and hangs on its renewals
    await flush();
    expect(keeper.held()).toHaveLength(2);
    timers.advance(L / 3 - 1); // 2/3 of the lease minus 1 ms after the take
    await flush();
    expect(events.filter((e) => e.kind === 'lost')).toEqual([]);
    timers.advance(1);
    await flush();
    expect(events.filter((e) => e.kind === 'lost').map((e) => e.slot)).toEqual([0, 1]);
    expect(keeper.held()).toEqual([]);
    // The hung renewals succeed late: the slots stay lost (their deadline passed), and are taken again at a new epoch.
    release();
    await keeper.settled();
    timers.advance(L / 3);
    await keeper.settled();
    expect(keeper.held()).toEqual([
      { slot: 0, epoch: 2 },
      { slot: 1, epoch: 2 },
    ]);
    await keeper.close();
  });

  it('announces a handoff request once, and hands over to the asker at epoch + 1', async () => {
    const { table, timers, events, keeper } = setup();
    timers.advance(0);
    await keeper.settled();
    table.leases.set(1, { ...table.leases.get(1)!, pendingOwner: 'b' });
    await table.beat('b', 0);
    timers.advance(L / 3);
    await keeper.settled();
    await table.beat('b', 1);
    timers.advance(L / 3);
    await keeper.settled();
    const requests = events.filter((e) => e.kind === 'handoffRequested');
    expect(requests).toEqual([{ kind: 'handoffRequested', slot: 1, epoch: 1, to: 'b' }]);
    const generation = table.leaseGeneration;
    await keeper.handOver({ slot: 1, epoch: 1 });
    expect(table.leases.get(1)).toEqual({ slot: 1, owner: 'b', epoch: 2, counter: expect.any(Number) });
    expect(table.leaseGeneration).toBe(generation + 1);
    expect(keeper.held().map((h) => h.slot)).toEqual([0]);
    await keeper.close();
  });
});
