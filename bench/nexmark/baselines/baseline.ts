import type { NexmarkEvent } from '../model.ts';

/**
 * A Nexmark query written by hand: one thread, plain Maps and arrays, no engine. It sees the events in the
 * batches the engine's source reads them in, and the same watermarks (highest event time so far - 4 s - 1, after
 * each batch), so it emits the same results at the same points of the stream. Results are pushed onto `out`,
 * which the driver empties after each call (a sink that discards them, as the engine's runs do).
 */
export interface Baseline<R = unknown> {
  processBatch(events: readonly NexmarkEvent[], out: R[]): void;
  /** Event time has reached `watermark` (+Infinity at the end of the input): emit what it completes. */
  advanceWatermark(watermark: number, out: R[]): void;
}

/** A fresh baseline per run: baselines keep state. */
export type BaselineFactory<R = unknown> = () => Baseline<R>;
