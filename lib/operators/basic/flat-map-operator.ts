import { UserFunctionError, originAt, type RecordBatch } from '../../core/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';

export class FlatMapOperator<IN, OUT> implements Operator<IN, OUT> {
  private output!: Output<OUT>;
  private subtask = 0;

  constructor(
    readonly name: string,
    private readonly fn: (value: IN) => Iterable<OUT>,
  ) {}

  open(ctx: OperatorContext, output: Output<OUT>): void {
    this.output = output;
    this.subtask = ctx.subtask;
  }

  processBatch(batch: RecordBatch<IN>): void {
    const fn = this.fn;
    const values = batch.values;
    const timestamps = batch.timestamps;
    const srcOffsets = batch.offsets;
    const n = values.length;
    const outValues: OUT[] = [];
    const outTimestamps: number[] = [];
    const outOffsets: number[] | undefined = srcOffsets === undefined ? undefined : [];
    let i = 0;
    try {
      for (; i < n; i++) {
        const produced = fn(values[i] as IN);
        const ts = timestamps[i] as number;
        const before = outValues.length;
        if (Array.isArray(produced)) {
          for (let j = 0; j < produced.length; j++) outValues.push(produced[j] as OUT);
        } else {
          for (const v of produced) outValues.push(v);
        }
        for (let j = before; j < outValues.length; j++) {
          outTimestamps.push(ts);
          if (outOffsets !== undefined) outOffsets.push(srcOffsets![i] as number);
        }
      }
    } catch (err) {
      throw new UserFunctionError(this.name, this.subtask, originAt(batch, i), err);
    }
    if (outValues.length > 0) {
      this.output.emit({ values: outValues, timestamps: outTimestamps, split: batch.split, offsets: outOffsets });
    }
  }
}
