import type { TimeWindow } from '../../contracts/functions.ts';
import { requirePositiveDuration } from './assigner-validation.ts';
import type { SessionWindowAssigner } from './window-assigner.ts';

/**
 * Each element opens the window [t, t + gap); windows of one key that overlap or touch merge into a session,
 * which ends `gap` after its last element.
 */
abstract class SessionWindows implements SessionWindowAssigner {
  readonly kind = 'session' as const;
  abstract readonly isEventTime: boolean;

  protected constructor(readonly gapMs: number) {}

  assignWindows(timestamp: number): TimeWindow[] {
    return [{ start: timestamp, end: timestamp + this.gapMs }];
  }

  toString(): string {
    return `${this.constructor.name}(gap=${this.gapMs}ms)`;
  }
}

/** Sessions over event time, fired by the watermark. */
export class EventTimeSessionWindows extends SessionWindows {
  readonly isEventTime = true;

  static withGap(gapMs: number): EventTimeSessionWindows {
    requirePositiveDuration('EventTimeSessionWindows.withGap', 'gap', gapMs);
    return new EventTimeSessionWindows(gapMs);
  }
}

/** Sessions over the task's clock: a session closes after `gap` ms without elements for its key. */
export class ProcessingTimeSessionWindows extends SessionWindows {
  readonly isEventTime = false;

  static withGap(gapMs: number): ProcessingTimeSessionWindows {
    requirePositiveDuration('ProcessingTimeSessionWindows.withGap', 'gap', gapMs);
    return new ProcessingTimeSessionWindows(gapMs);
  }
}
