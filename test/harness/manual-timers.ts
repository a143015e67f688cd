import type { ManualClock } from '../../lib/core/index.ts';

/**
 * setTimeout/clearTimeout on a ManualClock: nothing fires until `advance`, which moves the clock to each due timer
 * in turn and runs it. Lets tests drive lease expiry and renewal deadlines without waiting on the wall clock.
 */
export class ManualTimers {
  private readonly pending = new Map<number, { at: number; callback: () => void }>();
  private nextId = 1;

  constructor(readonly clock: ManualClock) {}

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { at: this.clock.now() + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    if (typeof handle === 'number') this.pending.delete(handle);
  }

  advance(ms: number): void {
    const end = this.clock.now() + ms;
    for (;;) {
      let next: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.pending) if (entry[1].at <= end && (next === undefined || entry[1].at < next[1].at)) next = entry;
      if (next === undefined) break;
      this.pending.delete(next[0]);
      if (next[1].at > this.clock.now()) this.clock.set(next[1].at);
      next[1].callback();
    }
    this.clock.set(end);
  }
}
