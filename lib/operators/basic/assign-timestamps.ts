import { UserFunctionError, originAt, type RecordBatch } from '../../core/index.ts';
import type { TimestampAssigner, WatermarkGenerator } from '../../api/watermark-strategy.ts';

/**
 * Gives each record its event timestamp (from the assigner, or the one it carries) and feeds the watermark
 * generator. Shared by the per-split source path and the per-subtask operator. Returns the batch with new
 * timestamps, or the same batch when there is no assigner.
 */
export function assignTimestamps<T>(
  batch: RecordBatch<T>,
  assigner: TimestampAssigner<T> | undefined,
  generator: WatermarkGenerator<T>,
  operatorName: string,
  subtask: number,
): RecordBatch<T> {
  const values = batch.values;
  const n = values.length;
  let i = 0;
  try {
    if (assigner === undefined) {
      for (; i < n; i++) generator.onEvent(values[i] as T, batch.timestamps[i] as number);
      return batch;
    }
    const timestamps = new Array<number>(n);
    for (; i < n; i++) {
      const ts = assigner(values[i] as T, batch.timestamps[i] as number);
      if (typeof ts !== 'number' || Number.isNaN(ts)) {
        throw new TypeError(`timestamp assigner returned ${String(ts)}; it must return epoch milliseconds as a number`);
      }
      timestamps[i] = ts;
      generator.onEvent(values[i] as T, ts);
    }
    return { ...batch, timestamps };
  } catch (err) {
    throw new UserFunctionError(operatorName, subtask, originAt(batch, i), err);
  }
}
