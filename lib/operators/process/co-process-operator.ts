import type { RecordBatch } from '../../core/index.ts';
import type { CoProcessFunction } from '../../contracts/functions.ts';
import type { TwoInputOperator } from '../operator.ts';
import { NonKeyedProcessBase } from './process-operator.ts';

/** Runs a non-keyed CoProcessFunction: input 0 -> processElement1, input 1 -> processElement2. */
export class CoProcessOperator<IN1, IN2, OUT>
  extends NonKeyedProcessBase<IN1 | IN2, OUT>
  implements TwoInputOperator<IN1, IN2, OUT>
{
  constructor(
    name: string,
    private readonly fn: CoProcessFunction<IN1, IN2, OUT>,
  ) {
    super(name, fn);
  }

  processBatch(batch: RecordBatch<IN1 | IN2>, input: number): void {
    if (input === 0) this.processWith(batch as RecordBatch<IN1>, this.fn, this.fn.processElement1);
    else this.processWith(batch as RecordBatch<IN2>, this.fn, this.fn.processElement2);
  }
}
