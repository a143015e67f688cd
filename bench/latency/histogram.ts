/**
 * A log-linear latency histogram (the HdrHistogram layout, small): values are whole microseconds; below 128 each
 * value has its own bucket, above it every power of two is split into 64 buckets, so a recorded value is known to
 * within 1/64 (1.6 %) and percentiles come out as the highest value of their bucket (never below the truth). Counts
 * are a plain array, so histograms of several threads are merged by adding them.
 */
const EXACT = 128;
const HALF = EXACT / 2;
const HALF_BITS = 6;
/** Up to 2^32 µs (71 minutes); longer latencies count in the last bucket. */
const MAX_EXPONENT = 32;
export const BUCKETS = EXACT + (MAX_EXPONENT - HALF_BITS - 1) * HALF;

export interface HistogramData {
  readonly counts: readonly number[];
  readonly total: number;
  /** Largest value recorded, exact (µs). */
  readonly max: number;
}

function bucketOf(micros: number): number {
  if (micros < EXACT) return micros;
  const shift = 31 - Math.clz32(micros) - HALF_BITS;
  return Math.min(EXACT + (shift - 1) * HALF + ((micros >>> shift) - HALF), BUCKETS - 1);
}

/** The highest value that falls into bucket `index`. */
export function highestValueOf(index: number): number {
  if (index < EXACT) return index;
  const shift = Math.floor((index - EXACT) / HALF) + 1;
  const sub = ((index - EXACT) % HALF) + HALF;
  return (sub + 1) * 2 ** shift - 1;
}

export class LatencyHistogram {
  private readonly counts: number[] = new Array<number>(BUCKETS).fill(0);
  private total = 0;
  private max = 0;

  /** Records a latency in milliseconds (fractions kept to the microsecond, rounded up; negative counts as 0). */
  recordMillis(ms: number): void {
    this.recordMicros(Math.ceil(ms * 1000));
  }

  recordMicros(micros: number): void {
    const value = micros > 0 ? Math.min(micros, 2 ** MAX_EXPONENT - 1) : 0;
    this.counts[bucketOf(value)]!++;
    this.total++;
    if (value > this.max) this.max = value;
  }

  get count(): number {
    return this.total;
  }

  /** Plain data (for postMessage). */
  data(): HistogramData {
    return { counts: [...this.counts], total: this.total, max: this.max };
  }

  add(other: HistogramData): void {
    for (let i = 0; i < BUCKETS; i++) this.counts[i]! += other.counts[i] ?? 0;
    this.total += other.total;
    if (other.max > this.max) this.max = other.max;
  }

  /**
   * The value at `percentile` (0 < p <= 100) by nearest rank: the smallest recorded value with at least p % of the
   * values at or below it, as its bucket's highest value (capped at the maximum). µs; 0 when empty.
   */
  percentileMicros(percentile: number): number {
    if (this.total === 0) return 0;
    // The epsilon keeps 99.9 % of 1,000 at rank 999: in floating point it is 999.0000000000001.
    const rank = Math.max(1, Math.ceil((percentile * this.total) / 100 - 1e-9));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(highestValueOf(i), this.max);
    }
    return this.max;
  }

  get maxMicros(): number {
    return this.max;
  }
}
