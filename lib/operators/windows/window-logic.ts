import type { Key } from '../../core/index.ts';
import type { Timer } from '../../state/timers/timer-service.ts';

/**
 * How one family of windows (fixed-size or sessions) assigns elements and reacts to timers. The operator sets the
 * backend's current key before each call.
 */
export interface WindowLogic<K extends Key> {
  /**
   * Adds the element to its windows; `time` is the event timestamp or, for processing time, the clock.
   * Returns false when it went into no window because they are all late.
   */
  processElement(value: unknown, time: number, key: K, watermark: number): boolean;
  /** A fire or cleanup timer of one window is due. */
  onTimer(timer: Timer): void;
}
