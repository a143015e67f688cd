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

/**
 * Event timestamps are whole milliseconds within the range a JS Date covers: |t| <= 8.64e15 ms (about 273,790
 * years either side of 1970). Negative timestamps (before 1970) are valid, as in Flink. Staying this far below
 * 2^53 keeps window arithmetic exact: a window start, end or cleanup time computed from a valid timestamp and a
 * window duration of at most MAX_WINDOW_DURATION_MS is still a safe integer.
 */
export const MIN_TIMESTAMP = -8.64e15;
export const MAX_TIMESTAMP = 8.64e15;

/**
 * Longest window size, slide, session gap or allowed lateness (about 5,800 years): their sum added to any valid
 * timestamp stays a safe integer, so no window boundary is ever rounded.
 */
export const MAX_WINDOW_DURATION_MS = Math.floor((Number.MAX_SAFE_INTEGER - MAX_TIMESTAMP) / 2);

/** Whether `value` is a valid event timestamp (see MIN_TIMESTAMP). Inlined in hot loops as the same test. */
export function isValidTimestamp(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= MIN_TIMESTAMP && (value as number) <= MAX_TIMESTAMP;
}

/** Why `value` is not a valid event timestamp, in words a user can act on; undefined when it is valid. */
export function invalidTimestampReason(value: unknown): string | undefined {
  if (isValidTimestamp(value)) return undefined;
  const shown = describeValue(value);
  if (typeof value !== 'number') return `event timestamp ${shown} is a ${value === null ? 'null' : typeof value}, not a number (epoch milliseconds)`;
  if (Number.isNaN(value)) return 'event timestamp is NaN, not epoch milliseconds';
  if (Number.isFinite(value) && Math.abs(value) <= MAX_TIMESTAMP) {
    return `event timestamp ${shown} is not a whole number of milliseconds`;
  }
  return `event timestamp ${shown} is outside the range of dates (-8.64e15 to 8.64e15 epoch milliseconds)`;
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'array' : 'object';
  return String(value);
}
