import type { OutputTag, RecordBatch } from '../../core/index.ts';
import type { Output } from '../output.ts';
import { LateRecords } from './late-records.ts';

/** Where one input's late records go: its late-data side output, or dropped and counted when it has no tag. */
export class LateRecordRoute<T> {
  private readonly records = new LateRecords<T>();
  private droppedCount = 0;

  constructor(private readonly tag: OutputTag<T> | undefined) {}

  /** Late records dropped because there was no tag. */
  get dropped(): number {
    return this.droppedCount;
  }

  add(batch: RecordBatch<T>, index: number): void {
    if (this.tag === undefined) this.droppedCount++;
    else this.records.add(batch, index);
  }

  flush(output: Output<unknown>): void {
    if (this.tag !== undefined) this.records.flush(output, this.tag);
  }

  discard(): void {
    this.records.discard();
  }
}
