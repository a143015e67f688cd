import { systemClock } from '../../../lib/core/index.ts';
import type { NexmarkConfig, NexmarkOptions } from '../config.ts';
import { nexmarkSource, WATERMARK_DELAY_MS } from '../source.ts';
import type { Baseline } from './baseline.ts';

/** The engine's default batch size (JobOptions.batchSize): the source reads the generator this many events at a time. */
export const SOURCE_BATCH_SIZE = 1024;

/**
 * Runs a baseline over the generated events in this thread: the generator is read through the same reader as the
 * engine's source (one split, batches of SOURCE_BATCH_SIZE), so both pay the same generation cost. After each
 * batch the watermark advances as the source's (highest event time - 4 s - 1); at the end it goes to +Infinity.
 * `onResults` gets each non-empty array of results, which is reused afterwards (copy what you keep).
 */
export function driveBaseline<R>(baseline: Baseline<R>, options: NexmarkOptions | NexmarkConfig, onResults: (results: R[]) => void): void {
  const source = nexmarkSource(options);
  const splits = source.createSplits({ parallelism: 1 });
  const reader = source.createReader(splits, { subtask: 0, parallelism: 1, clock: systemClock, signal: new AbortController().signal });
  const out: R[] = [];
  let maxTimestamp = Number.NEGATIVE_INFINITY;
  let watermark = Number.NEGATIVE_INFINITY;
  const deliver = (): void => {
    if (out.length === 0) return;
    onResults(out);
    out.length = 0;
  };
  for (;;) {
    const result = reader.poll(SOURCE_BATCH_SIZE);
    if (result.kind !== 'batch') break;
    const { values, timestamps } = result.batch;
    baseline.processBatch(values, out);
    deliver();
    for (let i = 0; i < timestamps.length; i++) if ((timestamps[i] as number) > maxTimestamp) maxTimestamp = timestamps[i] as number;
    if (maxTimestamp - WATERMARK_DELAY_MS - 1 > watermark) {
      watermark = maxTimestamp - WATERMARK_DELAY_MS - 1;
      baseline.advanceWatermark(watermark, out);
      deliver();
    }
  }
  baseline.advanceWatermark(Number.POSITIVE_INFINITY, out);
  deliver();
  reader.close();
}
