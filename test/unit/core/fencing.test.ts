import { describe, expect, it } from 'vitest';
import { assertNotFenced, FencedError, fencingTag, isFencingToken, nextFencingToken } from '../../../lib/core/fencing.ts';

describe('fencing token', () => {
  it('grows the epoch past the previous token and past any epoch seen elsewhere', () => {
    const first = nextFencingToken(undefined);
    expect(first).toEqual({ attempt: 0, epoch: 0 });
    expect(nextFencingToken(first)).toEqual({ attempt: 1, epoch: 1 });
    expect(nextFencingToken(undefined, 41)).toEqual({ attempt: 0, epoch: 42 });
    expect(nextFencingToken({ attempt: 3, epoch: 7 }, 2)).toEqual({ attempt: 4, epoch: 8 });
  });

  it('refuses an older epoch with a typed, non-retriable error and accepts the same or a newer one', () => {
    const current = { attempt: 2, epoch: 5 };
    expect(() => assertNotFenced('storage', current, { attempt: 9, epoch: 4 })).toThrow(FencedError);
    try {
      assertNotFenced('storage', current, { attempt: 1, epoch: 4 });
    } catch (e) {
      expect((e as FencedError).code).toBe('FENCED');
      expect((e as FencedError).retriable).toBe(false);
      expect((e as FencedError).message).toContain('epoch 4');
    }
    expect(() => assertNotFenced('storage', current, { attempt: 0, epoch: 5 })).not.toThrow();
    expect(() => assertNotFenced('storage', current, { attempt: 0, epoch: 6 })).not.toThrow();
    expect(() => assertNotFenced('storage', undefined, { attempt: 0, epoch: 0 })).not.toThrow();
  });

  it('validates decoded tokens and formats a stable tag', () => {
    expect(isFencingToken({ attempt: 0, epoch: 3 })).toBe(true);
    expect(isFencingToken({ attempt: -1, epoch: 3 })).toBe(false);
    expect(isFencingToken({ attempt: 0, epoch: 1.5 })).toBe(false);
    expect(isFencingToken('e1-a0')).toBe(false);
    expect(fencingTag({ attempt: 2, epoch: 11 })).toBe('e11-a2');
  });
});
