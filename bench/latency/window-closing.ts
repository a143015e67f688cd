import type { WatermarkGenerator } from 'sluice';
import { wallClock } from '../nexmark/timing.ts';
import type { LatencyRecord } from './record.ts';
import { report } from './reports.ts';

/**
 * Monotonous timestamps (watermark = highest timestamp - 1), and a report of the wall time at which this source
 * subtask's watermark first passes the end of each tumbling window: the runtime asks for the watermark right after
 * each batch and sends it downstream at once, so that moment is when the watermark that closes the window leaves
 * the source. A window counts in the measurement when all of its records were emitted after the warm-up.
 */
export class WindowClosingGenerator implements WatermarkGenerator<LatencyRecord> {
  private maxTimestamp = Number.NEGATIVE_INFINITY;
  private firstMeasured = Number.POSITIVE_INFINITY;
  /** End of the earliest window not yet reported closed. */
  private nextEnd = Number.NaN;

  constructor(private readonly windowMs: number) {}

  onEvent(value: LatencyRecord, timestamp: number): void {
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
    if (value.measured && timestamp < this.firstMeasured) this.firstMeasured = timestamp;
    if (Number.isNaN(this.nextEnd)) this.nextEnd = timestamp - (timestamp % this.windowMs) + this.windowMs;
  }

  currentWatermark(): number {
    const watermark = this.maxTimestamp - 1;
    if (watermark >= this.nextEnd - 1) {
      const at = wallClock();
      for (; this.nextEnd - 1 <= watermark; this.nextEnd += this.windowMs) {
        // Records stamped in the first measured millisecond may precede the warm-up's end: that window is left out.
        report({ kind: 'closed', end: this.nextEnd, at, measured: this.nextEnd - this.windowMs > this.firstMeasured });
      }
    }
    return watermark;
  }
}
