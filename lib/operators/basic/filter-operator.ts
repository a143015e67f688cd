import { UserFunctionError, originAt, type RecordBatch } from '../../core/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';

export class FilterOperator<T> implements Operator<T, T> {
  private output!: Output<T>;
  private subtask = 0;

  constructor(
    readonly name: string,
    private readonly predicate: (value: T) => boolean,
  ) {}

  open(ctx: OperatorContext, output: Output<T>): void {
    this.output = output;
    this.subtask = ctx.subtask;
  }

  processBatch(batch: RecordBatch<T>): void {
    const predicate = this.predicate;
    const values = batch.values;
    const timestamps = batch.timestamps;
    const srcOffsets = batch.offsets;
    const n = values.length;
    const outValues: T[] = [];
    const outTimestamps: number[] = [];
    const outOffsets: number[] | undefined = srcOffsets === undefined ? undefined : [];
    let i = 0;
    try {
      for (; i < n; i++) {
        const v = values[i] as T;
        if (predicate(v)) {
          outValues.push(v);
          outTimestamps.push(timestamps[i] as number);
          if (outOffsets !== undefined) outOffsets.push(srcOffsets![i] as number);
        }
      }
    } catch (err) {
      throw new UserFunctionError(this.name, this.subtask, originAt(batch, i), err);
    }
    if (outValues.length === n) this.output.emit(batch);
    else if (outValues.length > 0) {
      this.output.emit({ values: outValues, timestamps: outTimestamps, split: batch.split, offsets: outOffsets });
    }
  }
}
