import type { RecordBatch } from '../../core/index.ts';
import type { Sink, SinkWriter } from '../../connectors/sink.ts';
import type { Operator, OperatorContext } from '../operator.ts';

/** Adapts a Sink to the operator contract: the tail of a chain, emitting nothing. */
export class SinkOperator<T> implements Operator<T, never> {
  private writer: SinkWriter<T> | undefined;

  constructor(
    readonly name: string,
    private readonly sink: Sink<T>,
  ) {}

  async open(ctx: OperatorContext): Promise<void> {
    this.writer = await this.sink.createWriter({
      subtask: ctx.subtask,
      parallelism: ctx.parallelism,
      operatorName: this.name,
    });
  }

  processBatch(batch: RecordBatch<T>): void | Promise<void> {
    return this.writer!.write(batch);
  }

  processWatermark(): void {}

  endInput(): void | Promise<void> {
    return this.writer?.finish?.();
  }

  close(): void | Promise<void> {
    return this.writer?.close?.();
  }
}
