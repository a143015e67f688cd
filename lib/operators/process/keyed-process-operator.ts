import type { Key, RecordBatch } from '../../core/index.ts';
import type { KeyedProcessFunction } from '../../contracts/functions.ts';
import { withBatchKeys } from '../read-ahead.ts';
import { KeyedProcessBase } from './keyed-process-base.ts';

/**
 * Runs a KeyedProcessFunction: per record it sets the current key (state and timers are scoped to it), calls
 * processElement, and emits one batch per input batch. Timers and timestamp semantics: see KeyedProcessBase.
 */
export class KeyedProcessOperator<K extends Key, IN, OUT> extends KeyedProcessBase<K, IN, OUT> {
  constructor(
    name: string,
    private readonly keySelector: (value: IN) => K,
    private readonly fn: KeyedProcessFunction<K, IN, OUT>,
  ) {
    super(name, fn);
  }

  processBatch(batch: RecordBatch<IN>): void | Promise<void> {
    return withBatchKeys(this.state, batch.values, this.keySelector, () => this.processElements(batch));
  }

  private processElements(batch: RecordBatch<IN>): void {
    const { values, timestamps } = batch;
    const fn = this.fn;
    const element = this.element;
    const collector = this.collector;
    element.timeDomain = 'event';
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as IN;
      this.selectKey(this.keySelector, value, batch, i);
      const timestamp = timestamps[i] as number;
      element.timestamp = timestamp;
      collector.timestamp = timestamp;
      try {
        fn.processElement(value, element, collector);
      } catch (err) {
        throw this.failOnRecord(batch, i, err);
      }
    }
    collector.flush(this.output);
  }
}
