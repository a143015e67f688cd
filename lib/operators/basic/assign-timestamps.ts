import {
  MAX_TIMESTAMP,
  MIN_TIMESTAMP,
  NO_TIMESTAMP,
  SluiceError,
  UserFunctionError,
  invalidTimestampReason,
  originAt,
  selectFromBatch,
  type RecordBatch,
} from '../../core/index.ts';
import type { TimestampAssigner, WatermarkGenerator } from '../../contracts/watermark-strategy.ts';

/** A record whose event timestamp is invalid: its index in the batch, the value and why (invalidTimestampReason). */
export interface InvalidTimestamp {
  readonly index: number;
  readonly timestamp: unknown;
  readonly reason: string;
}

/**
 * Gives each record its event timestamp (from the assigner, or the one it carries) and feeds the watermark
 * generator. Shared by the per-split source path and the per-subtask operator. Returns the batch with new
 * timestamps, or the same batch when there is no assigner and every timestamp is valid.
 *
 * A timestamp must be valid (isValidTimestamp; a carried NO_TIMESTAMP is allowed when there is no assigner): an
 * invalid one never reaches the generator or the returned batch, and is reported to `onInvalid`, which may throw.
 */
export function assignTimestamps<T>(
  batch: RecordBatch<T>,
  assigner: TimestampAssigner<T> | undefined,
  generator: WatermarkGenerator<T>,
  operatorName: string,
  subtask: number,
  onInvalid: (invalid: InvalidTimestamp) => void,
): RecordBatch<T> {
  const values = batch.values;
  const n = values.length;
  let rejected: Set<number> | undefined;
  const reject = (index: number, timestamp: unknown): void => {
    (rejected ??= new Set()).add(index);
    onInvalid({ index, timestamp, reason: invalidTimestampReason(timestamp) as string });
  };
  let i = 0;
  let stamped = batch;
  try {
    if (assigner === undefined) {
      for (; i < n; i++) {
        const ts = batch.timestamps[i] as number;
        // The same test as isValidTimestamp, inlined: this runs for every record.
        if (!(Number.isInteger(ts) && ts >= MIN_TIMESTAMP && ts <= MAX_TIMESTAMP) && ts !== NO_TIMESTAMP) reject(i, ts);
        else generator.onEvent(values[i] as T, ts);
      }
    } else {
      const timestamps = new Array<number>(n);
      for (; i < n; i++) {
        const ts = assigner(values[i] as T, batch.timestamps[i] as number);
        timestamps[i] = ts;
        if (!(Number.isInteger(ts) && ts >= MIN_TIMESTAMP && ts <= MAX_TIMESTAMP)) reject(i, ts);
        else generator.onEvent(values[i] as T, ts);
      }
      stamped = { ...batch, timestamps };
    }
  } catch (err) {
    if (err instanceof SluiceError) throw err;
    throw new UserFunctionError(operatorName, subtask, originAt(batch, i), err);
  }
  if (rejected === undefined) return stamped;
  const dropped = rejected;
  return selectFromBatch(stamped, (_value, index) => !dropped.has(index));
}
