/**
 * A fixed emission schedule, decided in advance: record i is due at start + i / rate. A source stamps each record
 * with its due (intended) time, not with the time it actually gets sent, so when the source falls behind (the
 * pipeline pushes back, a GC pause, a checkpoint) the wait shows up in the measured latency instead of being left
 * out (coordinated omission).
 */
export class FixedRateSchedule {
  private readonly intervalMs: number;

  constructor(
    /** Due time of record 0, epoch ms. */
    readonly startMs: number,
    /** Records per second. */
    readonly rate: number,
    /** Records in the schedule. */
    readonly total: number,
  ) {
    if (!(rate > 0)) throw new RangeError(`rate must be > 0, got ${rate}`);
    this.intervalMs = 1000 / rate;
  }

  /** The intended emission time of record `index`. */
  intendedTime(index: number): number {
    return this.startMs + index * this.intervalMs;
  }

  /** How many records are due at `nowMs` (those whose intended time is <= now), at most `total`. */
  dueBy(nowMs: number): number {
    if (nowMs < this.startMs) return 0;
    return Math.min(this.total, Math.floor((nowMs - this.startMs) / this.intervalMs) + 1);
  }
}
