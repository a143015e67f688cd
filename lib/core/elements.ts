import type { RecordBatch } from './batch.ts';

/**
 * What flows on a channel, in order. Control elements never overtake records: a watermark or barrier sent after
 * a batch is received after it.
 */
export interface BatchElement<T> {
  readonly kind: 'batch';
  readonly batch: RecordBatch<T>;
}

/** No record with a timestamp <= `timestamp` will follow on this channel (late ones excepted). */
export interface WatermarkElement {
  readonly kind: 'watermark';
  readonly timestamp: number;
}

/** The channel's source went idle (no data for a while) or became active again; idle inputs do not hold back the min watermark. */
export interface IdleStatusElement {
  readonly kind: 'idle';
  readonly idle: boolean;
}

/** Chandy-Lamport barrier: everything before it belongs to checkpoint `checkpointId`. */
export interface BarrierElement {
  readonly kind: 'barrier';
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly savepoint: boolean;
}

/**
 * The producer has emitted its last record and flushed (end of bounded input); barriers of the final checkpoint
 * may still follow, then end of input.
 */
export interface EndOfDataElement {
  readonly kind: 'end-of-data';
}

/** The producer of this channel has finished; nothing follows. */
export interface EndOfInputElement {
  readonly kind: 'end';
}

export type ControlElement = WatermarkElement | IdleStatusElement | BarrierElement | EndOfDataElement | EndOfInputElement;
export type StreamElement<T> = BatchElement<T> | ControlElement;

export const END_OF_INPUT: EndOfInputElement = Object.freeze({ kind: 'end' });
export const END_OF_DATA: EndOfDataElement = Object.freeze({ kind: 'end-of-data' });

export function watermarkElement(timestamp: number): WatermarkElement {
  return { kind: 'watermark', timestamp };
}
