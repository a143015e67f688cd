import type { TimeWindow } from '../../contracts/functions.ts';
import { requireOffset, requirePositiveDuration } from './assigner-validation.ts';
import type { TumblingWindowAssigner } from './window-assigner.ts';
import { windowStart } from './window-math.ts';

/** Fixed-size, non-overlapping windows: every element belongs to exactly one. */
abstract class TumblingWindows implements TumblingWindowAssigner {
  readonly kind = 'tumbling' as const;
  abstract readonly isEventTime: boolean;

  protected constructor(
    readonly sizeMs: number,
    readonly offsetMs: number,
  ) {}

  assignWindows(timestamp: number): TimeWindow[] {
    const start = windowStart(timestamp, this.offsetMs, this.sizeMs);
    return [{ start, end: start + this.sizeMs }];
  }

  toString(): string {
    return `${this.constructor.name}(size=${this.sizeMs}ms, offset=${this.offsetMs}ms)`;
  }
}

function validate(where: string, sizeMs: number, offsetMs: number): void {
  requirePositiveDuration(where, 'size', sizeMs);
  requireOffset(where, offsetMs, 'size', sizeMs);
}

/** Tumbling windows over event time, fired by the watermark. */
export class TumblingEventTimeWindows extends TumblingWindows {
  readonly isEventTime = true;

  static of(sizeMs: number, offsetMs = 0): TumblingEventTimeWindows {
    validate('TumblingEventTimeWindows.of', sizeMs, offsetMs);
    return new TumblingEventTimeWindows(sizeMs, offsetMs);
  }
}

/** Tumbling windows over the task's clock, fired when the clock passes the window end. */
export class TumblingProcessingTimeWindows extends TumblingWindows {
  readonly isEventTime = false;

  static of(sizeMs: number, offsetMs = 0): TumblingProcessingTimeWindows {
    validate('TumblingProcessingTimeWindows.of', sizeMs, offsetMs);
    return new TumblingProcessingTimeWindows(sizeMs, offsetMs);
  }
}
