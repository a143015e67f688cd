import { UserFunctionError, originAt, type RecordBatch } from '../../core/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';

export class MapOperator<IN, OUT> implements Operator<IN, OUT> {
  private output!: Output<OUT>;
  private subtask = 0;

  constructor(
    readonly name: string,
    private readonly fn: (value: IN) => OUT,
  ) {}

  open(ctx: OperatorContext, output: Output<OUT>): void {
    this.output = output;
    this.subtask = ctx.subtask;
  }

  processBatch(batch: RecordBatch<IN>): void {
    const fn = this.fn;
    const values = batch.values;
    const n = values.length;
    const out = new Array<OUT>(n);
    let i = 0;
    try {
      for (; i < n; i++) out[i] = fn(values[i] as IN);
    } catch (err) {
      throw new UserFunctionError(this.name, this.subtask, originAt(batch, i), err);
    }
    // One output per input: timestamps and origins are shared, not copied.
    this.output.emit({ values: out, timestamps: batch.timestamps, split: batch.split, offsets: batch.offsets });
  }
}
