/**
 * Records move between operators in batches: parallel arrays of values and event timestamps.
 * `split` and `offsets` (parallel to `values`) say where each record came from, so that a failure can name
 * the record's origin; operators that keep records 1:1 (map) pass the same arrays on without copying.
 */
export interface RecordBatch<T> {
  readonly values: T[];
  readonly timestamps: number[];
  readonly split?: string | undefined;
  readonly offsets?: number[] | undefined;
}

export function batchOf<T>(values: T[], timestamps: number[], split?: string, offsets?: number[]): RecordBatch<T> {
  return { values, timestamps, split, offsets };
}

export function originAt(batch: RecordBatch<unknown>, index: number): { split: string; offset: number } | undefined {
  if (batch.split === undefined || batch.offsets === undefined) return undefined;
  const offset = batch.offsets[index];
  return offset === undefined ? undefined : { split: batch.split, offset };
}

/** Keeps records where `keep[i]` is true, with their timestamps and offsets. */
export function selectFromBatch<T>(batch: RecordBatch<T>, keep: (value: T, index: number) => boolean): RecordBatch<T> {
  const values: T[] = [];
  const timestamps: number[] = [];
  const srcOffsets = batch.offsets;
  const offsets: number[] | undefined = srcOffsets === undefined ? undefined : [];
  const n = batch.values.length;
  for (let i = 0; i < n; i++) {
    const v = batch.values[i] as T;
    if (keep(v, i)) {
      values.push(v);
      timestamps.push(batch.timestamps[i] as number);
      if (offsets !== undefined) offsets.push(srcOffsets![i] as number);
    }
  }
  return { values, timestamps, split: batch.split, offsets };
}
