import type { ShardState } from './shard-state.ts';

/** While fetches are in flight and nothing is ready, `poll` waits this long for one before returning 'wait'. */
export const FETCH_WAIT_MS = 10;
/** Longest 'wait' a poll returns, so that discovery, registry checks and idleness are looked at regularly. */
export const MAX_WAIT_MS = 100;

/** What the reader's idleness and wait decisions look at. */
export interface ReaderActivity {
  readonly order: readonly ShardState<unknown>[];
  /** Shards paused by watermark alignment. */
  readonly paused: ReadonlySet<string>;
}

/**
 * `stopWhenIdleMs`: nothing was read or discovered for that long, and every readable shard has been found
 * caught up, with nothing new, for that long. Start-up (consumer registration), throttled stretches without a
 * single answer, and pauses between fan-out subscriptions are not idle time. Shards waiting for a parent of
 * another subtask do not keep the reader going. `listed`: the stream was listed at least once.
 */
export function idleLongEnough(reader: ReaderActivity, idleMs: number | undefined, listed: boolean, lastActivityAt: number, now: number): boolean {
  if (idleMs === undefined || !listed) return false;
  if (now - lastActivityAt < idleMs) return false;
  for (const s of reader.order) {
    if (s.finished) continue;
    if (s.chunk !== undefined || s.endFetched || reader.paused.has(s.split.id)) return false;
    if (s.ready && (s.quietSince === undefined || now - s.quietSince < idleMs)) return false;
  }
  return true;
}

/** Shards with nothing to read now: at the tip at their last fetch, or waiting for their parents. */
export function caughtUpShards(order: readonly ShardState<unknown>[]): string[] {
  const ids: string[] = [];
  for (const s of order) {
    if (s.finished || s.chunk !== undefined) continue;
    if (!s.ready || s.quietSince !== undefined) ids.push(s.split.id);
  }
  return ids;
}

/** How long a 'wait' lasts: until the next fetch or discovery is due, at most MAX_WAIT_MS (performance.now() times). */
export function retryAfter(reader: ReaderActivity, now: number, nextDiscoveryAt: number | undefined, fetchesInFlight: boolean): number {
  let next = now + MAX_WAIT_MS;
  for (const s of reader.order) {
    if (s.finished || s.endFetched || s.fetching || s.chunk !== undefined || !s.ready || reader.paused.has(s.split.id)) continue;
    next = Math.min(next, s.nextFetchAt);
  }
  if (nextDiscoveryAt !== undefined) next = Math.min(next, nextDiscoveryAt);
  if (fetchesInFlight) next = Math.min(next, now + FETCH_WAIT_MS);
  return Math.max(1, Math.ceil(next - now));
}
