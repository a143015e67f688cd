import {
  UserFunctionError,
  checkKey,
  keyGroupFunction,
  originAt,
  subtaskForKeyGroup,
  type ControlElement,
  type Key,
  type KeyGroupFunction,
  type RecordBatch,
} from '../core/index.ts';
import type { PartitionerSpec } from '../graph/logical-graph.ts';
import type { ChannelSender } from './channels/channel.ts';

/**
 * Sends one producer subtask's output on one edge: partitions record batches over the downstream channels and
 * broadcasts control elements to all of them. A batch is split at most once per target, never per record.
 */
export class RecordWriter {
  private roundRobin: number;
  private readonly subtaskOfKeyGroup: Int32Array | undefined;
  /** The edge's key-group hash (murmur unless the keyBy asked for kinesis-hash): the keyed operator's state uses the same. */
  private readonly keyGroupOf: KeyGroupFunction;

  constructor(
    private readonly partitioner: PartitionerSpec,
    /** One sender per downstream subtask (forward: exactly one). */
    private readonly senders: readonly ChannelSender[],
    private readonly maxParallelism: number,
    private readonly producer: { name: string; subtask: number },
  ) {
    this.roundRobin = producer.subtask % Math.max(1, senders.length);
    this.keyGroupOf = keyGroupFunction(partitioner.kind === 'hash' ? partitioner.keyGroupHash : undefined);
    if (partitioner.kind === 'hash') {
      this.subtaskOfKeyGroup = new Int32Array(maxParallelism);
      for (let kg = 0; kg < maxParallelism; kg++) {
        this.subtaskOfKeyGroup[kg] = subtaskForKeyGroup(kg, senders.length, maxParallelism);
      }
    }
  }

  emit(batch: RecordBatch<unknown>): void {
    const senders = this.senders;
    switch (this.partitioner.kind) {
      case 'forward':
        senders[0]!.send({ kind: 'batch', batch });
        return;
      case 'rebalance':
        senders[this.roundRobin]!.send({ kind: 'batch', batch });
        this.roundRobin = (this.roundRobin + 1) % senders.length;
        return;
      case 'broadcast':
        for (const s of senders) s.send({ kind: 'batch', batch });
        return;
      case 'hash':
        this.emitByKey(batch, this.partitioner.keySelector);
        return;
    }
  }

  private emitByKey(batch: RecordBatch<unknown>, keySelector: (value: unknown) => Key): void {
    const senders = this.senders;
    if (senders.length === 1) {
      senders[0]!.send({ kind: 'batch', batch });
      return;
    }
    const table = this.subtaskOfKeyGroup!;
    const maxParallelism = this.maxParallelism;
    const keyGroupOf = this.keyGroupOf;
    const n = senders.length;
    const values: unknown[][] = [];
    const timestamps: number[][] = [];
    const offsets: (number[] | undefined)[] = [];
    const hasOffsets = batch.offsets !== undefined;
    for (let t = 0; t < n; t++) {
      values.push([]);
      timestamps.push([]);
      offsets.push(hasOffsets ? [] : undefined);
    }
    const src = batch.values;
    let i = 0;
    try {
      for (; i < src.length; i++) {
        const v = src[i];
        const key = checkKey(keySelector(v));
        const target = table[keyGroupOf(key, maxParallelism)] as number;
        values[target]!.push(v);
        timestamps[target]!.push(batch.timestamps[i] as number);
        if (hasOffsets) offsets[target]!.push(batch.offsets![i] as number);
      }
    } catch (err) {
      throw new UserFunctionError(`keyBy after ${this.producer.name}`, this.producer.subtask, originAt(batch, i), err);
    }
    for (let t = 0; t < n; t++) {
      if (values[t]!.length > 0) {
        senders[t]!.send({ kind: 'batch', batch: { values: values[t]!, timestamps: timestamps[t]!, split: batch.split, offsets: offsets[t] } });
      }
    }
  }

  broadcast(element: ControlElement): void {
    for (const s of this.senders) s.send(element);
  }

  get blocked(): boolean {
    for (const s of this.senders) if (s.blocked) return true;
    return false;
  }

  async flushed(): Promise<void> {
    for (const s of this.senders) await s.flushed();
  }

  async awaitCapacity(): Promise<void> {
    for (const s of this.senders) if (s.blocked) await s.awaitCapacity();
  }
}
