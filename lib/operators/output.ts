import type { OutputTag, RecordBatch } from '../core/index.ts';

/**
 * Where an operator sends what it produces. Emitting is synchronous: the batch is handed to the next chained
 * operator or buffered in the outgoing channel; the task applies backpressure between input elements.
 */
export interface Output<T> {
  emit(batch: RecordBatch<T>): void;
  emitWatermark(timestamp: number): void;
  emitSide<S>(tag: OutputTag<S>, batch: RecordBatch<S>): void;
}

/** Outputs that can carry an idleness status (the chain's network output does; operators rarely need it). */
export interface IdleAwareOutput<T> extends Output<T> {
  /** Marks this output idle (no records for a while: does not hold back downstream watermarks) or active again. */
  markIdle(idle: boolean): void;
}
