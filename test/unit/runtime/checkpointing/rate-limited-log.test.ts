import { describe, expect, it } from 'vitest';
import { RateLimitedLog } from '../../../../lib/runtime/logging/rate-limited-log.ts';

describe('RateLimitedLog', () => {
  it('prints the first of a kind, then at most one per interval with the count held back, and the rest on flush', () => {
    let now = 0;
    const lines: string[] = [];
    const log = new RateLimitedLog((l) => lines.push(l), { intervalMs: 1000, now: () => now });
    for (let id = 1; id <= 5; id++) {
      log.warn(`checkpoint ${id} aborted: ENOSPC`);
      now += 100;
    }
    log.warn('another warning');
    expect(lines).toEqual(['checkpoint 1 aborted: ENOSPC', 'another warning']);
    now = 1000;
    log.warn('checkpoint 6 aborted: ENOSPC');
    expect(lines.at(-1)).toBe('checkpoint 6 aborted: ENOSPC (and 4 more like it since the last report)');
    log.warn('checkpoint 7 aborted: ENOSPC');
    log.warn('checkpoint 8 aborted: ENOSPC');
    log.flush();
    expect(lines.slice(3)).toEqual(['checkpoint 8 aborted: ENOSPC (and 1 more like it since the last report)']);
    log.flush();
    expect(lines).toHaveLength(4);
  });
});
