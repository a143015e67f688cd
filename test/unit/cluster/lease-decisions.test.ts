import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseItem } from '../../../lib/cluster/control-items.ts';
import {
  decideLeaseRound,
  leaseExpired,
  liveWorkers,
  observeLeases,
  observeWorkers,
  renewalOverdue,
  type HeldLease,
  type LeaseRoundInput,
  type ObservedWorker,
} from '../../../lib/cluster/lease-decisions.ts';
import type { ObservedLease } from '../../../lib/cluster/ports.ts';
import { LeaseModel } from './lease-model.ts';

const L = 9000;

function lease(slot: number, owner: string | undefined, epoch = 1, extra: Partial<LeaseItem> = {}): LeaseItem {
  return { slot, epoch, counter: 5, ...(owner === undefined ? {} : { owner }), ...extra };
}

/** A lease whose counter last moved at `changedAt` on our clock. */
function seen(item: LeaseItem, changedAt = 1000): ObservedLease {
  return { lease: item, counterChangedAt: changedAt };
}

function beat(workerId: string, changedAt = 1000): ObservedWorker {
  return { heartbeat: { workerId, counter: 1, at: 0 }, counterChangedAt: changedAt };
}

function input(over: Partial<LeaseRoundInput>): LeaseRoundInput {
  return { workerId: 'a', slotCount: 4, leases: [], workers: [], held: [], asked: new Map(), leaseDurationMs: L, maxSlots: Infinity, now: 2000, ...over };
}

const held = (slot: number, epoch = 1, renewedAt = 1500): HeldLease => ({ slot, epoch, renewedAt });

describe('lease expiry and renewal deadline', () => {
  it.each([
    { changedAt: 0, now: L - 1, expired: false },
    { changedAt: 0, now: L, expired: true },
    { changedAt: 500, now: L + 499, expired: false },
  ])('a lease whose counter moved at $changedAt is expired at $now: $expired', ({ changedAt, now, expired }) => {
    expect(leaseExpired(seen(lease(0, 'b'), changedAt), now, L)).toBe(expired);
  });

  it('a released lease is expired at once', () => {
    expect(leaseExpired(seen(lease(0, undefined), 1000), 1000, L)).toBe(true);
  });

  it.each([
    { renewedAt: 0, now: 5999, overdue: false },
    { renewedAt: 0, now: 6000, overdue: true },
  ])('renewed at $renewedAt, overdue at $now: $overdue (2/3 of the lease)', ({ renewedAt, now, overdue }) => {
    expect(renewalOverdue(held(0, 1, renewedAt), now, L)).toBe(overdue);
  });
});

describe('observing counters', () => {
  it('keeps the time of the last change while the counter stands still and moves it when the counter moves', () => {
    const first = observeLeases(new Map(), [lease(0, 'b', 1, { counter: 1 })], 100);
    const same = observeLeases(first, [lease(0, 'b', 1, { counter: 1 })], 900);
    const moved = observeLeases(same, [lease(0, 'b', 1, { counter: 2 })], 1500);
    expect([first.get(0)?.counterChangedAt, same.get(0)?.counterChangedAt, moved.get(0)?.counterChangedAt]).toEqual([100, 100, 1500]);
    const workers = observeWorkers(observeWorkers(new Map(), [{ workerId: 'b', counter: 3, at: 0 }], 10), [{ workerId: 'b', counter: 3, at: 5 }], 20);
    expect(workers.get('b')?.counterChangedAt).toBe(10);
  });
});

describe('live workers', () => {
  it('counts itself, live heartbeats and owners of unexpired leases, not dead heartbeats or owners of expired leases', () => {
    const now = 20_000;
    const result = liveWorkers({
      workerId: 'a',
      now,
      leaseDurationMs: L,
      workers: [beat('b', now - 100), beat('dead', now - L)],
      leases: [seen(lease(0, 'c'), now - 10), seen(lease(1, 'gone'), now - L - 1)],
    });
    expect(result).toEqual(['a', 'b', 'c']);
  });
});

describe('decideLeaseRound', () => {
  it('alone on a fresh table: takes every missing slot', () => {
    const d = decideLeaseRound(input({}));
    expect(d.take.map((t) => [t.slot, t.reason])).toEqual([
      [0, 'missing'],
      [1, 'missing'],
      [2, 'missing'],
      [3, 'missing'],
    ]);
    expect(d.target).toBe(4);
  });

  it('with a second live worker: takes only its share, ceil(P / live)', () => {
    const d = decideLeaseRound(input({ slotCount: 5, workers: [beat('b')] }));
    expect(d.take.map((t) => t.slot)).toEqual([0, 1, 2]);
    expect(d.target).toBe(3);
  });

  it('prefers released over expired leases, and the longest expired first', () => {
    const now = 50_000;
    const d = decideLeaseRound(
      input({
        now,
        slotCount: 4,
        leases: [seen(lease(0, 'b'), now - L - 10), seen(lease(1, 'c'), now - L - 500), seen(lease(2, undefined), now), seen(lease(3, 'd'), now - 5)],
      }),
    );
    expect(d.take.map((t) => [t.slot, t.reason])).toEqual([
      [2, 'released'],
      [1, 'expired'],
    ]);
    expect(d.target).toBe(2); // d's lease is live: two workers
    expect(d.take[1]?.observed).toEqual(lease(1, 'c'));
  });

  it('does not take a lease whose counter moved less than a lease ago on its own clock', () => {
    const now = 50_000;
    const d = decideLeaseRound(input({ now, slotCount: 1, leases: [seen(lease(0, 'b'), now - L + 1)] }));
    expect(d.take).toEqual([]);
    const later = decideLeaseRound(input({ now: now + 1, slotCount: 1, leases: [seen(lease(0, 'b'), now - L + 1)] }));
    expect(later.take.map((t) => t.slot)).toEqual([0]);
  });

  it('keeps an own lease that the table still shows at its epoch, and loses it when overdue or taken', () => {
    const leases = [seen(lease(0, 'a', 3)), seen(lease(1, 'b', 4)), seen(lease(2, 'a', 2))];
    const d = decideLeaseRound(input({ slotCount: 3, now: 7000, leases, held: [held(0, 3, 6000), held(1, 3, 6000), held(2, 2, 1000)] }));
    expect(d.lose.map((l) => l.slot)).toEqual([1, 2]);
    expect(d.lose[0]?.reason).toContain('taken by b at epoch 4');
    expect(d.lose[1]?.reason).toContain('2/3 of the lease');
  });

  it('asks the most loaded worker for its highest slots when no lease is free', () => {
    const leases = [0, 1, 2, 3].map((s) => seen(lease(s, 'b')));
    const d = decideLeaseRound(input({ leases, workers: [beat('b')] }));
    expect(d.take).toEqual([]);
    expect(d.ask.map((a) => a.slot)).toEqual([3, 2]);
  });

  it('does not ask a worker that holds exactly the target when one more would not balance (5 slots: 3 and 2)', () => {
    const leases = [seen(lease(0, 'b')), seen(lease(1, 'b')), seen(lease(2, 'b')), seen(lease(3, 'a')), seen(lease(4, 'a'))];
    const d = decideLeaseRound(input({ slotCount: 5, leases, workers: [beat('b')], held: [held(3), held(4)] }));
    expect(d.ask).toEqual([]);
    expect(d.take).toEqual([]);
  });

  it('asks for one slot of a worker at the target when it is two or more below (4 slots over 3 workers: 2, 2, 0)', () => {
    const leases = [seen(lease(0, 'b')), seen(lease(1, 'b')), seen(lease(2, 'c')), seen(lease(3, 'c'))];
    const d = decideLeaseRound(input({ leases, workers: [beat('b'), beat('c')] }));
    expect(d.target).toBe(2);
    expect(d.ask.map((a) => [a.slot, a.observed.owner])).toEqual([[1, 'b']]);
  });

  it('counts slots already promised to it and does not ask for more', () => {
    const leases = [0, 1, 2].map((s) => seen(lease(s, 'b'))).concat(seen(lease(3, 'b', 1, { pendingOwner: 'a' })));
    const d = decideLeaseRound(input({ leases, workers: [beat('b')] }));
    expect(d.ask.map((a) => a.slot)).toEqual([2]);
  });

  it('reports a handoff request on its own lease only when the asker is live', () => {
    const leases = [seen(lease(0, 'a', 1, { pendingOwner: 'b' })), seen(lease(1, 'a', 1, { pendingOwner: 'dead' }))];
    const d = decideLeaseRound(input({ slotCount: 2, leases, workers: [beat('b'), beat('dead', 2000 - L)], held: [held(0), held(1)] }));
    expect(d.handoffRequested).toEqual([{ slot: 0, epoch: 1, to: 'b' }]);
  });

  it('adopts a slot handed over as asked (epoch + 1) and takes back one it does not know with a new epoch', () => {
    const leases = [seen(lease(0, 'a', 4)), seen(lease(1, 'a', 7))];
    const d = decideLeaseRound(input({ slotCount: 2, leases, asked: new Map([[0, { from: 'b', epoch: 3 }]]) }));
    expect(d.adopt).toEqual([{ slot: 0, epoch: 4, previousOwner: 'b' }]);
    expect(d.take.map((t) => [t.slot, t.reason])).toEqual([[1, 'reclaim']]);
  });

  it('never takes more than maxSlots', () => {
    const d = decideLeaseRound(input({ maxSlots: 1 }));
    expect(d.take.map((t) => t.slot)).toEqual([0]);
  });

  it('takes one slot beyond its share once it has been free for a whole lease (another worker is capped)', () => {
    const now = 30_000;
    const leases = [seen(lease(0, 'a'), now), seen(lease(1, 'a'), now), seen(lease(2, 'b'), now), seen(lease(3, undefined), now - L)];
    const base = { slotCount: 4, leases, workers: [beat('b', now), beat('c', now)], held: [held(0, 1, now), held(1, 1, now)], now };
    expect(decideLeaseRound(input(base)).take.map((t) => t.slot)).toEqual([3]);
    const fresh = [...leases.slice(0, 3), seen(lease(3, undefined), now - L + 1)];
    expect(decideLeaseRound(input({ ...base, leases: fresh })).take).toEqual([]);
  });
});

type Step =
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'round' | 'pause' | 'resume' | 'cut' | 'heal' | 'refuse-handoff'; readonly w: number };

function stepArbitrary(workers: number): fc.Arbitrary<Step> {
  const w = fc.integer({ min: 0, max: workers - 1 });
  return fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: L / 2 }).map((ms): Step => ({ kind: 'advance', ms })) },
    { weight: 6, arbitrary: w.map((i): Step => ({ kind: 'round', w: i })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('pause', 'resume', 'cut', 'heal', 'refuse-handoff' as const), w).map(([kind, i]): Step => ({ kind, w: i })) },
  );
}

describe('lease decisions over a shared model (property)', () => {
  it('no two workers believe they own a slot at once, no epoch starts twice, and the slots balance to ceil(P / live)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.record({ offset: fc.integer({ min: 0, max: 100_000 }), rate: fc.constantFrom(1, 1.1, 1.25) }), { minLength: 2, maxLength: 3 }),
        fc.array(stepArbitrary(3), { maxLength: 120 }),
        (slots, clocks, steps) => {
          const workers = clocks.map((c, i) => LeaseModel.worker(`w${i}`, c.offset, c.rate));
          const model = new LeaseModel(slots, L, workers);
          const assertSafe = (): void => {
            const owners = new Map<number, string>();
            for (const w of workers) {
              for (const slot of model.believed(w)) {
                const other = owners.get(slot);
                if (other !== undefined) throw new Error(`slot ${slot} believed by ${other} and ${w.id} at time ${model.time}`);
                owners.set(slot, w.id);
              }
            }
          };
          for (const step of steps) {
            if (step.kind === 'advance') model.advance(step.ms);
            else {
              const w = workers[step.w % workers.length]!;
              if (step.kind === 'round') model.round(w);
              else if (step.kind === 'refuse-handoff') model.round(w, false);
              else if (step.kind === 'pause') w.paused = true;
              else if (step.kind === 'resume') w.paused = false;
              else if (step.kind === 'cut') w.cutOff = true;
              else w.cutOff = false;
            }
            assertSafe();
          }
          // Everyone healthy again: rounds at a steady pace until balanced.
          for (const w of workers) {
            w.paused = false;
            w.cutOff = false;
          }
          for (let i = 0; i < 60; i++) {
            model.advance(L / 4);
            for (const w of workers) model.round(w);
            assertSafe();
          }
          const target = Math.ceil(slots / workers.length);
          const held = workers.flatMap((w) => w.held.map((h) => h.slot)).sort((a, b) => a - b);
          expect(held).toEqual(Array.from({ length: slots }, (_, i) => i));
          for (const w of workers) {
            expect(w.held.length).toBeLessThanOrEqual(target);
            for (const h of w.held) expect(model.leases.get(h.slot)).toMatchObject({ owner: w.id, epoch: h.epoch });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
