import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShardReceiver, type CompletedCheckpoint, type ExchangeFrame } from '../../../lib/cluster/exchange/index.ts';
import { DeliveryViolation, ExchangeWorld, recordId, targetOf, type WorldCommand } from '../../harness/exchange-world.ts';

const P = 2;

const slot = fc.integer({ min: 0, max: P - 1 });
const command: fc.Arbitrary<WorldCommand> = fc.oneof(
  { arbitrary: fc.record({ k: fc.constant('produce' as const), slot, n: fc.integer({ min: 1, max: 12 }) }), weight: 6 },
  {
    arbitrary: fc.record({
      k: fc.constant('flush' as const),
      slot,
      shuffle: fc.array(fc.nat({ max: 20 }), { maxLength: 3 }),
      duplicate: fc.boolean(),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ k: fc.constant('zombieProduce' as const), slot, n: fc.integer({ min: 1, max: 8 }) }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('zombieFlush' as const), slot }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('zombieMarker' as const), slot }), weight: 2 },
  { arbitrary: fc.constant({ k: 'trigger' as const }), weight: 3 },
  { arbitrary: fc.record({ k: fc.constant('barrier' as const), slot }), weight: 4 },
  { arbitrary: fc.record({ k: fc.constant('receiverSnapshot' as const), slot }), weight: 4 },
  { arbitrary: fc.constant({ k: 'complete' as const }), weight: 3 },
  { arbitrary: fc.constant({ k: 'checkpoint' as const }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('notify' as const), slot }), weight: 3 },
  { arbitrary: fc.record({ k: fc.constant('read' as const), slot, n: fc.integer({ min: 1, max: 10 }) }), weight: 6 },
  { arbitrary: fc.record({ k: fc.constant('poll' as const), slot, n: fc.integer({ min: 1, max: 5 }) }), weight: 4 },
  { arbitrary: fc.record({ k: fc.constant('crash' as const), slot, zombie: fc.boolean() }), weight: 2 },
);

const scenario = fc.record({
  commands: fc.array(command, { minLength: 20, maxLength: 200, size: 'max' }),
  maxBufferedBytes: fc.constantFrom(150, 400, 1_000, 64 * 1024 * 1024),
  maxFrameBytes: fc.constantFrom(90, 200, 256 * 1024),
});

/**
 * Runs the commands, then finishes (one more completed checkpoint, everything read and polled) and checks: every
 * record of the committed source prefixes was delivered exactly once, to its target, and nothing else was. While
 * running, the world itself refuses a delivery not yet covered by a completed checkpoint, or a second one.
 */
function deliversCommittedExactlyOnce(receiver: typeof ShardReceiver | undefined) {
  return (s: { commands: WorldCommand[]; maxBufferedBytes: number; maxFrameBytes: number }): void => {
    const world = new ExchangeWorld({ parallelism: P, maxBufferedBytes: s.maxBufferedBytes, maxFrameBytes: s.maxFrameBytes, ...(receiver ? { receiver } : {}) });
    for (const c of s.commands) world.run(c);
    const { delivered, committedOffsets } = world.finish();
    for (let r = 0; r < P; r++) {
      const expected: string[] = [];
      for (let p = 0; p < P; p++) {
        for (let k = 0; k < (committedOffsets[p] as number); k++) if (targetOf(p, k, P) === r) expected.push(recordId(p, k));
      }
      const got = [...(delivered[r] as string[])].sort();
      if (JSON.stringify(got) !== JSON.stringify(expected.sort())) {
        throw new DeliveryViolation(`slot ${r} delivered ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
      }
    }
  };
}

/** Receivers with one rule broken each, through their private methods (test-only surgery). */
type Hooks = Record<string, (this: Record<string, unknown>, ...args: unknown[]) => unknown>;
function broken(patch: (original: Hooks) => Hooks): typeof ShardReceiver {
  class Broken extends ShardReceiver {}
  const original = ShardReceiver.prototype as unknown as Hooks;
  Object.assign(Broken.prototype, patch(original));
  return Broken;
}

/** Forgets released-through on every data frame: re-read and duplicated frames are delivered again. */
const noDedup = broken((o) => ({
  onData(track, ...rest) {
    const t = track as { floor: unknown };
    const floor = t.floor;
    t.floor = { epoch: -1, seq: -1 };
    o['onData']!.call(this, track, ...rest);
    t.floor = floor;
  },
}));

/** Releases at the marker, without waiting for the checkpoint to complete (read-uncommitted). */
const releaseAtMarker = broken((o) => ({
  onMarker(track, marker) {
    const m = marker as { epoch: number; sentThrough: number };
    o['applyBoundary']!.call(this, track, { epoch: m.epoch, seq: m.sentThrough });
  },
}));

/** A new epoch's start frame releases everything of the restored epoch, also beyond its committed boundary. */
const keepSupersededEpoch = broken((o) => ({
  onStart(track, start) {
    const s = start as { from?: { epoch: number; checkpointId: number } };
    const from = s.from === undefined ? undefined : { ...s.from, sentThrough: Number.MAX_SAFE_INTEGER };
    o['onStart']!.call(this, track, { ...(start as object), from });
  },
}));

/** Trusts a marker of any epoch of the producer (a zombie's too) once its checkpoint completed. */
const trustZombieMarkers = broken((o) => ({
  applyCompleted(track) {
    const completed = this['completed'] as { slotEpochs: number[] } | undefined;
    const markers = (track as { markers: Map<string, { epoch: number }> }).markers;
    if (completed === undefined || markers.size === 0) return o['applyCompleted']!.call(this, track);
    const epoch = Math.max(...[...markers.values()].map((m) => m.epoch));
    const producer = (track as { producer: number }).producer;
    this['completed'] = { ...completed, slotEpochs: completed.slotEpochs.map((e, i) => (i === producer ? epoch : e)) };
    try {
      return o['applyCompleted']!.call(this, track);
    } finally {
      this['completed'] = completed;
    }
  },
}));

describe('exchange model: produce / crash / restore / checkpoint / complete / duplicates / reorder', () => {
  it('delivers each committed record exactly once and nothing uncommitted', () => {
    // A fixed seed keeps the suite deterministic; EXCHANGE_MODEL_SEED / EXCHANGE_MODEL_RUNS explore further.
    const seed = process.env['EXCHANGE_MODEL_SEED'];
    fc.assert(fc.property(scenario, deliversCommittedExactlyOnce(undefined)), {
      numRuns: Number(process.env['EXCHANGE_MODEL_RUNS'] ?? 400),
      seed: seed === undefined ? 20_261_202 : Number(seed),
    });
  });

  for (const [name, receiver] of [
    ['without duplicate detection', noDedup],
    ['releasing at the marker (read-uncommitted)', releaseAtMarker],
    ['releasing a superseded epoch beyond its boundary', keepSupersededEpoch],
    ["trusting a zombie's markers", trustZombieMarkers],
  ] as const) {
    it(`finds a counterexample for a receiver ${name}`, () => {
      const result = fc.check(fc.property(scenario, deliversCommittedExactlyOnce(receiver)), { numRuns: 3_000, seed: 20_261_202 });
      expect(result.failed).toBe(true);
      expect(result.errorInstance).toBeInstanceOf(DeliveryViolation);
    });
  }
});

/** A shard of [frame, bytes] read by one receiver with a small buffer, as the reader does: rewinding when told. */
function readShard(receiver: ShardReceiver, shard: readonly (readonly [ExchangeFrame, number])[], completion: CompletedCheckpoint): string[] {
  receiver.checkpointCompleted(completion);
  const delivered: string[] = [];
  let cursor = 0;
  let furthest = 0;
  let idle = 0;
  for (;;) {
    const deliveredBefore = delivered.length;
    const cursorBefore = cursor;
    for (let i = 0; i < 100; i++) {
      if (receiver.rewindPosition(cursor >= shard.length) !== undefined) cursor = Number(receiver.rewind());
      if (receiver.paused || cursor >= shard.length) break;
      const [frame, bytes] = shard[cursor] as readonly [ExchangeFrame, number];
      receiver.acceptFrame(frame, bytes, String(cursor));
      cursor++;
    }
    for (const batch of receiver.take()) delivered.push(...batch.values.map(String));
    if (cursor === cursorBefore && delivered.length === deliveredBefore) return delivered;
    idle = delivered.length > deliveredBefore || cursor > furthest ? 0 : idle + 1;
    furthest = Math.max(furthest, cursor);
    if (idle === 20) throw new DeliveryViolation(`livelock at frame ${cursor} with ${receiver.buffered} bytes buffered, delivered ${JSON.stringify(delivered)}`);
  }
}

const data = (producer: number, epoch: number, seq: number): ExchangeFrame => ({ kind: 'data', edge: 'e1', producer, epoch, seq, values: [`${producer}:${epoch}:${seq}`], timestamps: [0] });

// Counterexamples the model found with seeds other than the default: each made the receiver go back and re-read
// the same frames forever.
describe('exchange receiver with a tiny buffer: no livelock between pausing and re-reading', () => {
  it('holds the lowest frame of a reordered run when only three of four fit, letting go of the highest instead', () => {
    const shard: (readonly [ExchangeFrame, number])[] = [
      [{ kind: 'start', edge: 'e1', producer: 1, epoch: 2 }, 10],
      [data(1, 2, 3), 49],
      [data(1, 2, 1), 49],
      [data(1, 2, 2), 43],
      [data(1, 2, 0), 43],
      // Epoch 2 is committed through seq 3 only by the next epoch's start frame: its own markers never count.
      [{ kind: 'start', edge: 'e1', producer: 1, epoch: 3, from: { checkpointId: 11, epoch: 2, sentThrough: 3 } }, 10],
    ];
    const delivered = readShard(new ShardReceiver('shard-0', { maxBufferedBytes: 150 }), shard, { checkpointId: 15, slotEpochs: [1, 3] });
    expect(delivered).toEqual(['1:2:0', '1:2:1', '1:2:2', '1:2:3']);
  });

  // The scenarios themselves, regenerated from their seeds (fast-check generates them the same way every time).
  for (const [seed, run] of [
    [1, 1352],
    [15, 46],
    [16, 1055],
    [26, 1801],
    [39, 1937],
  ] as const) {
    it(`delivers the committed records of the model's scenario seed ${seed}, run ${run}`, () => {
      const s = fc.sample(scenario, { seed, numRuns: run + 1 })[run];
      expect(s).toBeDefined();
      deliversCommittedExactlyOnce(undefined)(s as NonNullable<typeof s>);
    });
  }
});
