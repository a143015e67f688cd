import {
  decodeFrame,
  ProducerSequencer,
  ShardReceiver,
  type CompletedCheckpoint,
  type ExchangeSenderSnapshot,
  type ExchangeShardSnapshot,
} from '../../lib/cluster/exchange/index.ts';

/**
 * An in-memory cluster of P slots joined by one exchange edge, for the exchange's model test: each slot has a
 * producer (reading its own deterministic source) and a receiver (reading shard `slot` of an in-memory stream), a
 * checkpoint coordinator (one checkpoint in flight, completed when every slot's producer and receiver took it), and
 * crashes that restore a slot from the latest completed checkpoint at a new epoch, optionally leaving the old
 * incarnation running as a zombie. Commands that do not apply in the current state do nothing.
 */
export type WorldCommand =
  | { readonly k: 'produce'; readonly slot: number; readonly n: number }
  | { readonly k: 'flush'; readonly slot: number; readonly shuffle: readonly number[]; readonly duplicate: boolean }
  | { readonly k: 'zombieProduce'; readonly slot: number; readonly n: number }
  | { readonly k: 'zombieFlush'; readonly slot: number }
  | { readonly k: 'zombieMarker'; readonly slot: number }
  | { readonly k: 'trigger' }
  | { readonly k: 'barrier'; readonly slot: number }
  | { readonly k: 'receiverSnapshot'; readonly slot: number }
  | { readonly k: 'complete' }
  /** trigger, every barrier and receiver snapshot in slot order, complete: a checkpoint with nothing in between. */
  | { readonly k: 'checkpoint' }
  | { readonly k: 'notify'; readonly slot: number }
  | { readonly k: 'read'; readonly slot: number; readonly n: number }
  | { readonly k: 'poll'; readonly slot: number; readonly n: number }
  | { readonly k: 'crash'; readonly slot: number; readonly zombie: boolean };

export const EDGE = 'e1';

/**
 * Rounds (each reads up to 1000 frames per shard, more than a run writes) without a delivery or a frame read for the
 * first time, after which the receivers count as livelocked.
 */
export const LIVELOCK_ROUNDS = 20;

/** Record k of slot p's source, and the slot the partitioner sends it to. */
export function recordId(producer: number, k: number): string {
  return `${producer}:${k}`;
}
export function targetOf(producer: number, k: number, parallelism: number): number {
  return (k * k + 3 * producer + (k >> 2)) % parallelism;
}

interface Producer {
  readonly epoch: number;
  offset: number;
  /** The last checkpoint whose barrier this incarnation passed: a producer passes each barrier once. */
  lastBarrier: number;
  readonly seq: ProducerSequencer;
  readonly pending: { values: unknown[]; timestamps: number[] }[];
  readonly started: boolean[];
}

interface Receiver {
  readonly machine: ShardReceiver;
  cursor: number;
  delivered: string[];
}

interface SlotCheckpoint {
  readonly epoch: number;
  readonly offset: number;
  readonly sender: ExchangeSenderSnapshot;
}

interface PendingCheckpoint {
  readonly id: number;
  readonly producers: Map<number, SlotCheckpoint>;
  readonly receivers: Map<number, { snapshot: ExchangeShardSnapshot; delivered: string[] }>;
}

interface CompletedState extends CompletedCheckpoint {
  readonly producers: Map<number, SlotCheckpoint>;
  readonly receivers: Map<number, { snapshot: ExchangeShardSnapshot; delivered: string[] }>;
}

/** A violation of the delivery contract seen while the commands ran. */
export class DeliveryViolation extends Error {}

export interface WorldOptions {
  readonly parallelism: number;
  /** The receivers' buffer limit (small, so that the pause and re-read path runs). */
  readonly maxBufferedBytes: number;
  /** Largest data frame (small, so that batches split). */
  readonly maxFrameBytes: number;
  /** The receiver implementation; a test passes a deliberately broken one to see the model catch it. */
  readonly receiver?: typeof ShardReceiver;
}

export class ExchangeWorld {
  readonly parallelism: number;
  private readonly options: WorldOptions;
  private readonly shards: Uint8Array[][];
  private readonly epochs: number[];
  private readonly producers: Producer[];
  private readonly zombies: (Producer | undefined)[];
  private readonly receivers: Receiver[];
  private nextCheckpoint = 1;
  private pending: PendingCheckpoint | undefined;
  private completed: CompletedState | undefined;

  constructor(options: WorldOptions) {
    this.options = options;
    this.parallelism = options.parallelism;
    const P = this.parallelism;
    this.shards = Array.from({ length: P }, () => []);
    this.epochs = Array.from({ length: P }, () => 1);
    this.producers = Array.from({ length: P }, (_, slot) => this.newProducer(slot, 1, undefined));
    this.zombies = Array.from({ length: P }, () => undefined);
    this.receivers = Array.from({ length: P }, (_, slot) => this.newReceiver(slot, undefined));
  }

  run(command: WorldCommand): void {
    switch (command.k) {
      case 'produce':
        this.produce(this.producer(command.slot), command.n);
        return;
      case 'flush':
        this.flush(this.producer(command.slot), command.shuffle, command.duplicate);
        return;
      case 'zombieProduce': {
        const zombie = this.zombies[command.slot];
        if (zombie !== undefined) this.produce(zombie, command.n);
        return;
      }
      case 'zombieFlush': {
        const zombie = this.zombies[command.slot];
        if (zombie !== undefined) this.flush(zombie, [], false);
        return;
      }
      case 'zombieMarker': {
        // A paused zombie sees the latest trigger after its lease is gone, and passes the barrier: markers, no ack.
        const zombie = this.zombies[command.slot];
        if (zombie !== undefined && this.nextCheckpoint - 1 > zombie.lastBarrier) this.barrier(zombie, this.nextCheckpoint - 1);
        return;
      }
      case 'trigger':
        if (this.pending === undefined) this.pending = { id: this.nextCheckpoint++, producers: new Map(), receivers: new Map() };
        return;
      case 'barrier': {
        const pending = this.pending;
        if (pending === undefined || pending.producers.has(command.slot)) return;
        const producer = this.producer(command.slot);
        const sender = this.barrier(producer, pending.id);
        pending.producers.set(command.slot, { epoch: producer.epoch, offset: producer.offset, sender });
        return;
      }
      case 'receiverSnapshot': {
        const pending = this.pending;
        if (pending === undefined || pending.receivers.has(command.slot)) return;
        const receiver = this.receiver(command.slot);
        pending.receivers.set(command.slot, { snapshot: receiver.machine.snapshot(), delivered: [...receiver.delivered] });
        return;
      }
      case 'complete': {
        const pending = this.pending;
        if (pending === undefined || pending.producers.size < this.parallelism || pending.receivers.size < this.parallelism) return;
        const slotEpochs = Array.from({ length: this.parallelism }, (_, s) => (pending.producers.get(s) as SlotCheckpoint).epoch);
        this.completed = { checkpointId: pending.id, slotEpochs, producers: pending.producers, receivers: pending.receivers };
        this.pending = undefined;
        return;
      }
      case 'checkpoint':
        this.run({ k: 'trigger' });
        for (let s = 0; s < this.parallelism; s++) {
          this.run({ k: 'barrier', slot: s });
          this.run({ k: 'receiverSnapshot', slot: s });
        }
        this.run({ k: 'complete' });
        return;
      case 'notify':
        if (this.completed !== undefined) this.receiver(command.slot).machine.checkpointCompleted(this.completed);
        return;
      case 'read':
        this.read(this.receiver(command.slot), command.n);
        return;
      case 'poll':
        this.poll(command.slot, command.n);
        return;
      case 'crash':
        this.crash(command.slot, command.zombie);
        return;
    }
  }

  /**
   * Ends the run: zombies stop, live producers flush, one more checkpoint completes and every receiver reads and
   * polls until nothing moves. Returns what each receiving slot delivered, and the committed source offsets.
   */
  finish(): { delivered: string[][]; committedOffsets: number[] } {
    this.zombies.fill(undefined);
    this.pending = undefined;
    this.run({ k: 'trigger' });
    for (let s = 0; s < this.parallelism; s++) {
      this.run({ k: 'barrier', slot: s });
      this.run({ k: 'receiverSnapshot', slot: s });
    }
    this.run({ k: 'complete' });
    for (let s = 0; s < this.parallelism; s++) this.run({ k: 'notify', slot: s });
    // Progress is a delivery or reading further into a shard than ever before; a receiver that only goes back and
    // re-reads the same frames (a livelock between pausing and rewinding) fails after a few rounds, not at a timeout.
    const furthest = this.receivers.map((r) => r.cursor);
    let idle = 0;
    for (let round = 0; ; round++) {
      if (round === 2_000) throw new DeliveryViolation('the receivers did not settle after 2000 rounds of reading and polling');
      let moved = false;
      let progressed = false;
      for (let s = 0; s < this.parallelism; s++) {
        const receiver = this.receiver(s);
        const before = receiver.cursor;
        const deliveredBefore = receiver.delivered.length;
        this.read(receiver, 1_000);
        this.poll(s, 1_000);
        if (receiver.cursor !== before || receiver.delivered.length !== deliveredBefore) moved = true;
        if (receiver.delivered.length !== deliveredBefore || receiver.cursor > (furthest[s] as number)) progressed = true;
        furthest[s] = Math.max(furthest[s] as number, receiver.cursor);
      }
      if (!moved) break;
      idle = progressed ? 0 : idle + 1;
      if (idle === LIVELOCK_ROUNDS) {
        const stuck = this.receivers.map((r, s) => `slot ${s}: cursor ${r.cursor}, ${r.machine.buffered} bytes buffered, paused ${r.machine.paused}`);
        throw new DeliveryViolation(`livelock: ${LIVELOCK_ROUNDS} rounds of reading and polling without a delivery or a new frame (${stuck.join('; ')})`);
      }
    }
    const committed = this.completed as CompletedState;
    return {
      delivered: this.receivers.map((r) => r.delivered),
      committedOffsets: Array.from({ length: this.parallelism }, (_, s) => (committed.producers.get(s) as SlotCheckpoint).offset),
    };
  }

  /** Source offsets covered by the latest completed checkpoint (0 before the first). */
  committedOffset(slot: number): number {
    return this.completed?.producers.get(slot)?.offset ?? 0;
  }

  private producer(slot: number): Producer {
    return this.producers[slot] as Producer;
  }

  private receiver(slot: number): Receiver {
    return this.receivers[slot] as Receiver;
  }

  private newProducer(slot: number, epoch: number, restored: SlotCheckpoint | undefined): Producer {
    return {
      epoch,
      offset: restored?.offset ?? 0,
      lastBarrier: restored?.sender.checkpointId ?? 0,
      seq: new ProducerSequencer({ edge: EDGE, producer: slot, epoch, restoredFrom: restored?.sender, maxFrameBytes: this.options.maxFrameBytes }),
      pending: Array.from({ length: this.parallelism }, () => ({ values: [], timestamps: [] })),
      started: Array.from({ length: this.parallelism }, () => false),
    };
  }

  private newReceiver(slot: number, restored: { snapshot: ExchangeShardSnapshot; delivered: string[] } | undefined): Receiver {
    const Impl = this.options.receiver ?? ShardReceiver;
    const machine = new Impl(`shard-${slot}`, { maxBufferedBytes: this.options.maxBufferedBytes }, restored?.snapshot);
    const start = machine.startPosition;
    const cursor = start === undefined ? 0 : 'at' in start ? Number(start.at) : Number(start.after) + 1;
    return { machine, cursor, delivered: [...(restored?.delivered ?? [])] };
  }

  private produce(producer: Producer, n: number): void {
    const slot = producer.seq.producer;
    for (let i = 0; i < n; i++) {
      const k = producer.offset++;
      const target = producer.pending[targetOf(slot, k, this.parallelism)] as { values: unknown[]; timestamps: number[] };
      target.values.push(recordId(slot, k));
      target.timestamps.push(k);
    }
  }

  /** Writes the producer's pending frames; `shuffle` reorders them within the write and `duplicate` repeats some (PutRecords retries). */
  private flush(producer: Producer, shuffle: readonly number[], duplicate: boolean): void {
    for (let t = 0; t < this.parallelism; t++) {
      const frames: Uint8Array[] = [];
      if (!producer.started[t]) {
        frames.push(producer.seq.startFrame());
        producer.started[t] = true;
      }
      const pending = producer.pending[t] as { values: unknown[]; timestamps: number[] };
      for (const frame of producer.seq.dataFrames(pending.values, pending.timestamps)) frames.push(frame.bytes);
      pending.values = [];
      pending.timestamps = [];
      for (let i = 0; i < shuffle.length && frames.length > 1; i++) {
        const a = (shuffle[i] as number) % frames.length;
        const b = (i * 7 + 3) % frames.length;
        [frames[a], frames[b]] = [frames[b] as Uint8Array, frames[a] as Uint8Array];
      }
      if (duplicate && frames.length > 0) frames.push(frames[(shuffle[0] ?? 0) % frames.length] as Uint8Array);
      this.shards[t]?.push(...frames);
    }
  }

  private barrier(producer: Producer, checkpointId: number): ExchangeSenderSnapshot {
    producer.lastBarrier = checkpointId;
    this.flush(producer, [], false);
    for (let t = 0; t < this.parallelism; t++) this.shards[t]?.push(producer.seq.markerFrame(checkpointId));
    return producer.seq.snapshot(checkpointId);
  }

  private read(receiver: Receiver, n: number): void {
    const shard = this.shards[Number(receiver.machine.shardId.slice('shard-'.length))] as Uint8Array[];
    for (let i = 0; i < n; i++) {
      if (receiver.machine.rewindPosition(receiver.cursor >= shard.length) !== undefined) receiver.cursor = Number(receiver.machine.rewind());
      if (receiver.machine.paused || receiver.cursor >= shard.length) return;
      receiver.machine.accept(shard[receiver.cursor] as Uint8Array, String(receiver.cursor));
      receiver.cursor++;
    }
  }

  private poll(slot: number, n: number): void {
    const receiver = this.receiver(slot);
    for (const batch of receiver.machine.take(n)) {
      for (const value of batch.values) {
        const id = String(value);
        const k = Number(id.split(':')[1]);
        if (k >= this.committedOffset(batch.producer)) {
          throw new DeliveryViolation(`slot ${slot} delivered ${id} while the latest completed checkpoint covers only ${this.committedOffset(batch.producer)} records of slot ${batch.producer}`);
        }
        if (receiver.delivered.includes(id)) throw new DeliveryViolation(`slot ${slot} delivered ${id} twice`);
        receiver.delivered.push(id);
      }
    }
  }

  private crash(slot: number, zombie: boolean): void {
    // A takeover bumps the lease generation: the checkpoint in flight can no longer complete.
    this.pending = undefined;
    this.zombies[slot] = zombie ? this.producer(slot) : undefined;
    const epoch = ++this.epochs[slot]!;
    const restored = this.completed;
    this.producers[slot] = this.newProducer(slot, epoch, restored?.producers.get(slot));
    this.receivers[slot] = this.newReceiver(slot, restored?.receivers.get(slot));
    // The worker reads the control item before it starts the slot.
    if (restored !== undefined) this.receiver(slot).machine.checkpointCompleted(restored);
  }
}

/** The frames of a shard, decoded, for debugging a counterexample. */
export function describeFrame(bytes: Uint8Array): string {
  const f = decodeFrame(bytes, 'debug');
  if (f.kind === 'data') return `data p${f.producer} e${f.epoch} s${f.seq} [${f.values.join(',')}]`;
  if (f.kind === 'marker') return `marker p${f.producer} e${f.epoch} c${f.checkpointId} n${f.sentThrough}`;
  return `start p${f.producer} e${f.epoch} from ${JSON.stringify(f.from)}`;
}
