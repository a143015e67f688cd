import type { OutputTag, RecordBatch } from '../../core/index.ts';
import type { Output } from '../output.ts';

/** Late records of one input batch, kept with their timestamps and origins for the late-data side output. */
export class LateRecords<T> {
  private values: T[] = [];
  private timestamps: number[] = [];
  private offsets: number[] | undefined;
  private split: string | undefined;

  add(batch: RecordBatch<T>, index: number): void {
    if (this.values.length === 0) {
      this.split = batch.split;
      this.offsets = batch.offsets === undefined ? undefined : [];
    }
    this.values.push(batch.values[index] as T);
    this.timestamps.push(batch.timestamps[index] as number);
    if (this.offsets !== undefined) this.offsets.push(batch.offsets?.[index] as number);
  }

  flush(output: Output<unknown>, tag: OutputTag<T>): void {
    if (this.values.length === 0) return;
    const batch: RecordBatch<T> = {
      values: this.values,
      timestamps: this.timestamps,
      split: this.split,
      offsets: this.offsets,
    };
    this.values = [];
    this.timestamps = [];
    this.offsets = undefined;
    output.emitSide(tag, batch);
  }

  discard(): void {
    this.values = [];
    this.timestamps = [];
    this.offsets = undefined;
  }
}
