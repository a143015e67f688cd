/**
 * The random stream of one event: it depends only on (seed, event id), so an event is the same whichever subtask
 * generates it and in whatever order (Beam seeds java.util.Random with the event id for the same reason). One
 * instance is reset per event; no allocation.
 */
export class EventRandom {
  private state = 0;
  private seedHash = 0;

  /** Sets the seed (reduced to 32 bits) that every later `reset` mixes in. */
  setSeed(seed: number): void {
    const whole = Math.trunc(seed);
    this.seedHash = mix32((mix32(Math.floor(whole / 4294967296) >>> 0) ^ (whole >>> 0) ^ 0x9e3779b9) >>> 0);
  }

  /** Starts the stream of event `id` (a non-negative integer, possibly above 2^32). */
  reset(id: number): void {
    const lo = id >>> 0;
    const hi = Math.floor(id / 4294967296) >>> 0;
    this.state = mix32(this.seedHash ^ lo) ^ mix32(hi + 0x632be5ab);
  }

  /** Uniform 32-bit unsigned integer (a mulberry32 step). */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1), 53 bits. */
  nextDouble(): number {
    return ((this.nextUint32() >>> 5) * 67108864 + (this.nextUint32() >>> 6)) / 9007199254740992;
  }

  /** Uniform integer in [0, n) for 1 <= n <= 2^32 (java.util.Random.nextInt semantics, 32-bit resolution). */
  nextInt(n: number): number {
    return Math.floor((this.nextUint32() / 4294967296) * n);
  }

  /** Uniform integer in [0, n) for any safe n >= 1 (Beam's LongGenerator.nextLong). */
  nextLong(n: number): number {
    return n <= 4294967296 ? this.nextInt(n) : Math.floor(this.nextDouble() * n);
  }
}

/** The murmur3 finalizer: a bijective 32-bit mix. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
