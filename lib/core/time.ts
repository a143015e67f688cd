/**
 * Event time is epoch milliseconds as a JS number. -Infinity means "no timestamp" / "no watermark yet";
 * +Infinity is the final watermark sent at the end of bounded input, which fires every event-time timer.
 */
export const NO_TIMESTAMP = Number.NEGATIVE_INFINITY;
export const MIN_WATERMARK = Number.NEGATIVE_INFINITY;
export const MAX_WATERMARK = Number.POSITIVE_INFINITY;

/** Processing-time source, replaceable in tests. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock moved by hand, for deterministic tests of processing-time behaviour. */
export class ManualClock implements Clock {
  constructor(private time = 0) {}
  now(): number {
    return this.time;
  }
  set(time: number): void {
    this.time = time;
  }
  advance(ms: number): void {
    this.time += ms;
  }
}
