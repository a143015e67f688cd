import type { OutputTag, RecordBatch } from '../../core/index.ts';
import type { Output } from '../output.ts';

interface SideBuffer {
  readonly tag: OutputTag<unknown>;
  values: unknown[];
  timestamps: number[];
}

/**
 * Collects what one input batch, watermark or wake-up produces and hands it downstream as one batch per output,
 * so that firing many windows costs one emit.
 */
export class WindowEmitter<OUT> {
  private values: OUT[] = [];
  private timestamps: number[] = [];
  private readonly side = new Map<string, SideBuffer>();

  push(value: OUT, timestamp: number): void {
    this.values.push(value);
    this.timestamps.push(timestamp);
  }

  pushSide<S>(tag: OutputTag<S>, value: S, timestamp: number): void {
    let buffer = this.side.get(tag.id);
    if (buffer === undefined) {
      buffer = { tag, values: [], timestamps: [] };
      this.side.set(tag.id, buffer);
    }
    buffer.values.push(value);
    buffer.timestamps.push(timestamp);
  }

  flush(output: Output<OUT>): void {
    if (this.values.length > 0) {
      const batch: RecordBatch<OUT> = { values: this.values, timestamps: this.timestamps };
      this.values = [];
      this.timestamps = [];
      output.emit(batch);
    }
    if (this.side.size === 0) return;
    for (const buffer of this.side.values()) {
      if (buffer.values.length === 0) continue;
      const batch: RecordBatch<unknown> = { values: buffer.values, timestamps: buffer.timestamps };
      buffer.values = [];
      buffer.timestamps = [];
      output.emitSide(buffer.tag, batch);
    }
  }

  /** Drops what was collected (the batch failed; the task restarts from a checkpoint). */
  discard(): void {
    this.values = [];
    this.timestamps = [];
    this.side.clear();
  }
}
