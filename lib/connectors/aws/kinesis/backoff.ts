import { ConfigError } from '../../../core/index.ts';

/** Retries of throttled and transient calls: exponential backoff with full jitter. */
export interface RetryOptions {
  /** Delay ceiling of the first retry. @default 100 */
  readonly baseDelayMs?: number;
  /** Largest delay between two attempts. @default 5000 */
  readonly maxDelayMs?: number;
  /**
   * Consecutive failed attempts of one call before giving up. Throttling does not count: a throttled call is
   * retried for as long as it takes (Kinesis asks to slow down, not to stop). @default 10
   */
  readonly maxAttempts?: number;
}

export interface RetryPolicy {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxAttempts: number;
}

export function compileRetry(what: string, options: RetryOptions = {}): RetryPolicy {
  const num = (name: string, v: number | undefined, fallback: number, min: number): number => {
    if (v === undefined) return fallback;
    if (!Number.isFinite(v) || v < min) throw new ConfigError(`${what}: retry.${name} must be a number >= ${min}, got ${v}`);
    return v;
  };
  const baseDelayMs = num('baseDelayMs', options.baseDelayMs, 100, 0);
  const maxDelayMs = num('maxDelayMs', options.maxDelayMs, 5000, baseDelayMs);
  const maxAttempts = num('maxAttempts', options.maxAttempts, 10, 1);
  if (!Number.isInteger(maxAttempts)) throw new ConfigError(`${what}: retry.maxAttempts must be an integer, got ${maxAttempts}`);
  return { baseDelayMs, maxDelayMs, maxAttempts };
}

/**
 * Delay before retry number `attempt` (1-based): uniform in [0, min(max, base * 2^(attempt-1))], so that many
 * readers throttled at once do not retry in step ("full jitter").
 */
export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.floor(random() * (ceiling + 1));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
