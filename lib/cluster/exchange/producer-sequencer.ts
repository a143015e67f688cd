import { ExchangeError } from './exchange-error.ts';
import type { ExchangeSenderSnapshot } from './exchange-ports.ts';
import { encodeDataFrames, encodeFrame, MAX_FRAME_BYTES, type EncodedDataFrame } from './exchange-frames.ts';

/**
 * The producer's numbering of one exchange edge in one slot and epoch: frame seqs count from 0 in every epoch (the
 * epoch, not the seq, tells a restarted producer's frames apart), markers say how far the seqs went at a barrier.
 * Pure: the sender that owns it does the writes, and must have every frame with seq <= a marker's `sentThrough`
 * acknowledged by the stream before it writes that marker.
 */
export class ProducerSequencer {
  readonly edge: string;
  readonly producer: number;
  readonly epoch: number;
  private readonly restoredFrom: ExchangeSenderSnapshot | undefined;
  private readonly maxFrameBytes: number;
  private next = 0;

  constructor(options: {
    readonly edge: string;
    readonly producer: number;
    readonly epoch: number;
    /** The sender state of the completed checkpoint the slot restored; absent on a fresh start. */
    readonly restoredFrom?: ExchangeSenderSnapshot | undefined;
    /** @default MAX_FRAME_BYTES (256 KiB) */
    readonly maxFrameBytes?: number;
  }) {
    const { edge, producer, epoch, restoredFrom } = options;
    if (restoredFrom !== undefined) {
      if (restoredFrom.edge !== edge || restoredFrom.producer !== producer) {
        throw new ExchangeError(
          `exchange sender of edge ${edge}, slot ${producer} was given the checkpointed state of edge ${restoredFrom.edge}, slot ${restoredFrom.producer}`,
        );
      }
      if (restoredFrom.epoch >= epoch) {
        throw new ExchangeError(
          `exchange sender of edge ${edge}, slot ${producer}: epoch ${epoch} restores a state written by epoch ${restoredFrom.epoch}; every restart must run at a higher epoch`,
        );
      }
    }
    this.edge = edge;
    this.producer = producer;
    this.epoch = epoch;
    this.restoredFrom = restoredFrom;
    this.maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  }

  /** The frame that opens this epoch in every target shard, before any other frame of the epoch. */
  startFrame(): Uint8Array {
    const from = this.restoredFrom;
    return encodeFrame({
      kind: 'start',
      edge: this.edge,
      producer: this.producer,
      epoch: this.epoch,
      ...(from === undefined ? {} : { from: { checkpointId: from.checkpointId, epoch: from.epoch, sentThrough: from.sentThrough } }),
    });
  }

  /** Records for one target as data frames of at most `maxFrameBytes`, each with the next seq. */
  dataFrames(values: readonly unknown[], timestamps: readonly number[]): EncodedDataFrame[] {
    return encodeDataFrames({ edge: this.edge, producer: this.producer, epoch: this.epoch }, values, timestamps, () => this.next++, this.maxFrameBytes);
  }

  /** Highest seq handed out so far (-1 before the first frame). */
  get lastSeq(): number {
    return this.next - 1;
  }

  /** The marker of checkpoint `checkpointId`, covering every frame numbered so far. */
  markerFrame(checkpointId: number): Uint8Array {
    return encodeFrame({ kind: 'marker', edge: this.edge, producer: this.producer, epoch: this.epoch, checkpointId, sentThrough: this.lastSeq });
  }

  snapshot(checkpointId: number): ExchangeSenderSnapshot {
    return { edge: this.edge, producer: this.producer, checkpointId, epoch: this.epoch, sentThrough: this.lastSeq };
  }
}
