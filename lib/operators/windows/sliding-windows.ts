import type { TimeWindow } from '../../contracts/functions.ts';
import { ConfigError } from '../../core/index.ts';
import { requireOffset, requirePositiveDuration } from './assigner-validation.ts';
import type { SlidingWindowAssigner } from './window-assigner.ts';
import { windowStart } from './window-math.ts';

/** Windows of `size` starting every `slide`: an element belongs to about size/slide windows. */
abstract class SlidingWindows implements SlidingWindowAssigner {
  readonly kind = 'sliding' as const;
  abstract readonly isEventTime: boolean;

  protected constructor(
    readonly sizeMs: number,
    readonly slideMs: number,
    readonly offsetMs: number,
  ) {}

  /** Latest window first, as Flink's SlidingEventTimeWindows does. */
  assignWindows(timestamp: number): TimeWindow[] {
    const windows: TimeWindow[] = [];
    const lastStart = windowStart(timestamp, this.offsetMs, this.slideMs);
    for (let start = lastStart; start > timestamp - this.sizeMs; start -= this.slideMs) {
      windows.push({ start, end: start + this.sizeMs });
    }
    return windows;
  }

  toString(): string {
    return `${this.constructor.name}(size=${this.sizeMs}ms, slide=${this.slideMs}ms, offset=${this.offsetMs}ms)`;
  }
}

function validate(where: string, sizeMs: number, slideMs: number, offsetMs: number): void {
  requirePositiveDuration(where, 'size', sizeMs);
  requirePositiveDuration(where, 'slide', slideMs);
  if (slideMs > sizeMs) {
    throw new ConfigError(
      `${where}: slide (${slideMs} ms) must not exceed size (${sizeMs} ms), or elements between windows would ` +
        'belong to no window; use a slide <= size (slide = size gives tumbling windows)',
    );
  }
  requireOffset(where, offsetMs, 'slide', slideMs);
}

/** Sliding windows over event time, fired by the watermark. */
export class SlidingEventTimeWindows extends SlidingWindows {
  readonly isEventTime = true;

  static of(sizeMs: number, slideMs: number, offsetMs = 0): SlidingEventTimeWindows {
    validate('SlidingEventTimeWindows.of', sizeMs, slideMs, offsetMs);
    return new SlidingEventTimeWindows(sizeMs, slideMs, offsetMs);
  }
}

/** Sliding windows over the task's clock. */
export class SlidingProcessingTimeWindows extends SlidingWindows {
  readonly isEventTime = false;

  static of(sizeMs: number, slideMs: number, offsetMs = 0): SlidingProcessingTimeWindows {
    validate('SlidingProcessingTimeWindows.of', sizeMs, slideMs, offsetMs);
    return new SlidingProcessingTimeWindows(sizeMs, slideMs, offsetMs);
  }
}
