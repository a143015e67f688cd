/**
 * Counter-based random numbers: the stream for record `index` depends only on (seed, index), so a record is the
 * same whichever subtask makes it and in whatever order. One instance is reset per record (no allocation).
 */
export class CounterRandom {
  private state = 0;
  /** Uniform in [0, 1); bound, so it can be handed to user code as a plain function. */
  readonly next: () => number = () => {
    // mulberry32 step
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };

  /** Starts the stream of record `index` (a non-negative integer, possibly above 2^32) under `seed`. */
  reset(seed: number, index: number): void {
    const lo = index >>> 0;
    const hi = Math.floor(index / 4294967296) >>> 0;
    this.state = mix32(mix32(seed ^ 0x9e3779b9) ^ lo) ^ mix32(hi + 0x632be5ab);
  }
}

/** The splitmix32 / murmur3 finalizer: a bijective 32-bit mix. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x21f0aaad);
  x = Math.imul(x ^ (x >>> 15), 0x735a2d97);
  return (x ^ (x >>> 15)) >>> 0;
}

/** Reduces any finite number to a 32-bit seed (integers below 2^32 map to themselves). */
export function normalizeSeed(seed: number): number {
  const whole = Math.trunc(seed);
  return (mix32(Math.floor(whole / 4294967296) >>> 0) ^ (whole >>> 0)) >>> 0;
}
