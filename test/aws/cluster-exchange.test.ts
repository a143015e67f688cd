import { describe, expect, it } from 'vitest';
import type { ExchangeReceiverInput, ExchangeSender, ExchangeSenderSnapshot } from '../../lib/cluster/exchange/index.ts';
import { ConfigError } from '../../lib/core/index.ts';
import { KinesisExchangeProducer, KinesisExchangeReceiver } from '../../lib/connectors/aws/cluster/exchange/index.ts';
import { useKinesisEmulator } from '../harness/aws/kinesis-test-setup.ts';

const kinesis = useKinesisEmulator();
const P = 2;
const EDGE = '3';

/** Record k of slot p's source, routed to slot (k + p) % P. */
function batch(p: number, from: number, to: number) {
  const values: string[] = [];
  const timestamps: number[] = [];
  const targets: number[] = [];
  for (let k = from; k < to; k++) {
    values.push(`${p}:${k}`);
    timestamps.push(k);
    targets.push((k + p) % P);
  }
  return { values, timestamps, targets };
}

function expectedFor(slot: number, committedThrough: readonly number[]): string[] {
  const out: string[] = [];
  for (let p = 0; p < P; p++) for (let k = 0; k < (committedThrough[p] as number); k++) if ((k + p) % P === slot) out.push(`${p}:${k}`);
  return out.sort();
}

/** Polls the receivers until each delivered `want[r]` records (or 60 s pass), collecting what they release. */
async function drain(receivers: readonly ExchangeReceiverInput[], delivered: string[][], want: readonly number[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (receivers.some((_, r) => (delivered[r] as string[]).length < (want[r] as number)) && Date.now() < deadline) {
    await Promise.race([Promise.any(receivers.map((r) => r.whenReady())), new Promise((res) => setTimeout(res, 50))]);
    receivers.forEach((receiver, r) => {
      for (const b of receiver.poll()) (delivered[r] as string[]).push(...(b.values as string[]));
    });
  }
}

describe('exchange through an internal Kinesis stream (kinesalite)', () => {
  it('refuses a stream without exactly P shards', async () => {
    const stream = await kinesis.newStream('exchange-bad', 3);
    await expect(KinesisExchangeProducer.open({ stream, parallelism: 2, slot: 0, epoch: 1, clientConfig: kinesis.emu.clientConfig })).rejects.toBeInstanceOf(ConfigError);
    await expect(KinesisExchangeReceiver.open({ stream, parallelism: 2, slot: 0, clientConfig: kinesis.emu.clientConfig })).rejects.toThrow(/3 open shards.*exactly 2/);
  });

  it('2 slots -> 2 slots: receivers release exactly the committed records across a producer crash, a zombie and a restart at a new epoch', async () => {
    const stream = await kinesis.newStream('exchange', P);
    const common = { stream, parallelism: P, clientConfig: kinesis.emu.clientConfig, maxFrameBytes: 2_000 };
    const producers = [
      await KinesisExchangeProducer.open({ ...common, slot: 0, epoch: 1 }),
      await KinesisExchangeProducer.open({ ...common, slot: 1, epoch: 1 }),
    ];
    const senders: ExchangeSender[] = producers.map((p) => p.sender(EDGE));
    const receivers = [0, 1].map((slot) => KinesisExchangeReceiver.open({ stream, parallelism: P, slot, clientConfig: kinesis.emu.clientConfig, idlePollMs: 20 }));
    const rx = await Promise.all(receivers);
    const delivered: string[][] = [[], []];
    try {
      // Checkpoint 1 covers records 0..299 of both producers.
      for (let from = 0; from < 300; from += 50) await Promise.all(senders.map((s, p) => s.send(batch(p, from, from + 50))));
      const c1: ExchangeSenderSnapshot[] = await Promise.all(senders.map((s) => s.onBarrier(1)));
      // Sent after the barrier: not committed by checkpoint 1, and slot 0 never commits them (it crashes).
      await Promise.all(senders.map((s, p) => s.send(batch(p, 300, 400))));
      expect(rx.flatMap((r) => r.poll())).toEqual([]);
      rx.forEach((r) => r.checkpointCompleted({ checkpointId: 1, slotEpochs: [1, 1] }));
      await drain(rx, delivered, [expectedFor(0, [300, 300]).length, expectedFor(1, [300, 300]).length]);
      expect(delivered.map((d) => [...d].sort())).toEqual([expectedFor(0, [300, 300]), expectedFor(1, [300, 300])]);

      // Slot 0 restarts at epoch 2 from checkpoint 1 and replays its source from 300; the old incarnation lives on
      // as a zombie that sends more and passes barrier 2 (its ack would be refused).
      const zombie = senders[0] as ExchangeSender;
      const restarted = await KinesisExchangeProducer.open({ ...common, slot: 0, epoch: 2 });
      const sender0 = restarted.sender(EDGE, c1[0]);
      await zombie.send(batch(0, 400, 450));
      await zombie.onBarrier(2);
      await producers[0]?.close();
      for (let from = 300; from < 500; from += 50) await sender0.send(batch(0, from, from + 50));
      await (senders[1] as ExchangeSender).send(batch(1, 400, 500));
      await Promise.all([sender0.onBarrier(2), (senders[1] as ExchangeSender).onBarrier(2)]);
      await sender0.send(batch(0, 500, 520));
      rx.forEach((r) => r.checkpointCompleted({ checkpointId: 2, slotEpochs: [2, 1] }));
      const want = [expectedFor(0, [500, 500]), expectedFor(1, [500, 500])];
      await drain(rx, delivered, want.map((w) => w.length));
      expect(delivered.map((d) => [...d].sort())).toEqual(want);
      // Nothing more comes: neither the zombie's records beyond its boundary nor the uncommitted tail.
      const more = rx.flatMap((r) => r.poll());
      expect(more).toEqual([]);

      // A receiver restored from its snapshot re-reads from its oldest undelivered record and delivers nothing twice.
      const snapshot = rx[1]!.snapshot();
      await rx[1]!.close();
      const again = await KinesisExchangeReceiver.open({ stream, parallelism: P, slot: 1, restoredFrom: snapshot, clientConfig: kinesis.emu.clientConfig, idlePollMs: 20 });
      rx[1] = again;
      again.checkpointCompleted({ checkpointId: 2, slotEpochs: [2, 1] });
      await (senders[1] as ExchangeSender).send(batch(1, 500, 540));
      await sender0.send(batch(0, 520, 540));
      await Promise.all([sender0.onBarrier(3), (senders[1] as ExchangeSender).onBarrier(3)]);
      rx.forEach((r) => r.checkpointCompleted({ checkpointId: 3, slotEpochs: [2, 1] }));
      const final = [expectedFor(0, [540, 540]), expectedFor(1, [540, 540])];
      await drain(rx, delivered, final.map((w) => w.length));
      expect(delivered.map((d) => [...d].sort())).toEqual(final);
      await restarted.close();
    } finally {
      await Promise.all(producers.map((p) => p.close()));
      await Promise.all(rx.map((r) => r.close()));
    }
  }, 80_000);
});
