import type { Key, RecordBatch } from '../../core/index.ts';
import type { KeyedCoProcessFunction } from '../../contracts/functions.ts';
import type { TwoInputOperator } from '../operator.ts';
import { withBatchKeys } from '../read-ahead.ts';
import { KeyedProcessBase } from './keyed-process-base.ts';

/**
 * Runs a KeyedCoProcessFunction: batches of input 0 go to processElement1, of input 1 to processElement2. Both
 * inputs share one key space, so state and timers of a key are the same whichever input set it.
 * Timers and timestamp semantics: see KeyedProcessBase.
 */
export class KeyedCoProcessOperator<K extends Key, IN1, IN2, OUT>
  extends KeyedProcessBase<K, IN1 | IN2, OUT>
  implements TwoInputOperator<IN1, IN2, OUT>
{
  constructor(
    name: string,
    private readonly keySelector1: (value: IN1) => K,
    private readonly keySelector2: (value: IN2) => K,
    private readonly fn: KeyedCoProcessFunction<K, IN1, IN2, OUT>,
  ) {
    super(name, fn);
  }

  processBatch(batch: RecordBatch<IN1 | IN2>, input: number): void | Promise<void> {
    if (input === 0) {
      const first = batch as RecordBatch<IN1>;
      return withBatchKeys(this.state, first.values, this.keySelector1, () =>
        this.processInput(first, this.keySelector1, this.fn.processElement1),
      );
    }
    const second = batch as RecordBatch<IN2>;
    return withBatchKeys(this.state, second.values, this.keySelector2, () =>
      this.processInput(second, this.keySelector2, this.fn.processElement2),
    );
  }

  private processInput<V>(
    batch: RecordBatch<V>,
    keySelector: (value: V) => K,
    processElement: KeyedCoProcessFunction<K, V, V, OUT>['processElement1'],
  ): void {
    const { values, timestamps } = batch;
    const fn = this.fn;
    const element = this.element;
    const collector = this.collector;
    element.timeDomain = 'event';
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as V;
      this.selectKey(keySelector, value, batch, i);
      const timestamp = timestamps[i] as number;
      element.timestamp = timestamp;
      collector.timestamp = timestamp;
      try {
        processElement.call(fn, value, element, collector);
      } catch (err) {
        throw this.failOnRecord(batch, i, err);
      }
    }
    collector.flush(this.output);
  }
}
