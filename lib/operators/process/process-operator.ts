import { originAt, type RecordBatch } from '../../core/index.ts';
import type { Collector, ProcessContext, ProcessFunction, RuntimeContext } from '../../contracts/functions.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { BufferingCollector, ElementContext, runtimeContext, userFunctionError } from './process-contexts.ts';

/** Lifecycle of the non-keyed process operators: open/close of the function, watermark tracking, batch loop. */
export abstract class NonKeyedProcessBase<IN, OUT> implements Operator<IN, OUT> {
  protected ctx!: OperatorContext;
  protected output!: Output<OUT>;
  protected readonly collector = new BufferingCollector<OUT>();
  protected element!: ElementContext;

  constructor(
    readonly name: string,
    private readonly lifecycle: { open?(ctx: RuntimeContext): void; close?(): void },
  ) {}

  open(ctx: OperatorContext, output: Output<OUT>): void {
    this.ctx = ctx;
    this.output = output;
    this.element = new ElementContext(ctx.clock, this.collector as BufferingCollector<unknown>);
    this.element.watermark = ctx.currentWatermark();
    try {
      this.lifecycle.open?.(runtimeContext(ctx));
    } catch (err) {
      throw userFunctionError(ctx, this.name, undefined, err);
    }
  }

  abstract processBatch(batch: RecordBatch<IN>, input: number): void;

  processWatermark(timestamp: number): void {
    this.element.watermark = timestamp;
    this.output.emitWatermark(timestamp);
  }

  close(): void {
    if (this.ctx === undefined) return;
    try {
      this.lifecycle.close?.();
    } catch (err) {
      throw userFunctionError(this.ctx, this.name, undefined, err);
    }
  }

  /** Calls `processElement` for every record of the batch and emits one batch of what it collected. */
  protected processWith<V>(
    batch: RecordBatch<V>,
    target: object,
    processElement: (value: V, ctx: ProcessContext, out: Collector<OUT>) => void,
  ): void {
    const { values, timestamps } = batch;
    const element = this.element;
    const collector = this.collector;
    for (let i = 0; i < values.length; i++) {
      const timestamp = timestamps[i] as number;
      element.timestamp = timestamp;
      collector.timestamp = timestamp;
      try {
        processElement.call(target, values[i] as V, element, collector);
      } catch (err) {
        collector.discard();
        throw userFunctionError(this.ctx, this.name, originAt(batch, i), err);
      }
    }
    collector.flush(this.output);
  }
}

/** Runs a non-keyed ProcessFunction; outputs carry the input record's timestamp. */
export class ProcessOperator<IN, OUT> extends NonKeyedProcessBase<IN, OUT> {
  constructor(
    name: string,
    private readonly fn: ProcessFunction<IN, OUT>,
  ) {
    super(name, fn);
  }

  processBatch(batch: RecordBatch<IN>): void {
    this.processWith(batch, this.fn, this.fn.processElement);
  }
}
