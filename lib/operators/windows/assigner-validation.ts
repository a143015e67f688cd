import { ConfigError, MAX_WINDOW_DURATION_MS } from '../../core/index.ts';

/** Durations are bounded (MAX_WINDOW_DURATION_MS) so that window boundaries of any valid timestamp stay exact. */
export function requirePositiveDuration(where: string, what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0 || value > MAX_WINDOW_DURATION_MS) {
    throw new ConfigError(
      `${where}: ${what} must be a positive whole number of milliseconds, got ${String(value)}; the largest ` +
        `allowed is ${MAX_WINDOW_DURATION_MS} (about 5,800 years)`,
    );
  }
}

/** Offsets shift window starts (e.g. to align daily windows to a time zone); |offset| must stay below `limit`. */
export function requireOffset(where: string, offset: number, limitName: string, limit: number): void {
  if (!Number.isSafeInteger(offset) || Math.abs(offset) >= limit) {
    throw new ConfigError(
      `${where}: offset must be a whole number of milliseconds with |offset| < ${limitName} (${limit} ms), ` +
        `got ${String(offset)}; use offset % ${limitName} instead`,
    );
  }
}
