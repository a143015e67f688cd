/**
 * Keys of the first filter segment; a full segment is followed by one twice as large, so a filter grows with its
 * generation and a lookup probes few segments (log2 of the generation's keys / this).
 */
const FIRST_SEGMENT_KEYS = 1 << 16;
/** 10 bits per key and 7 probes: about 1% false positives. */
const BITS_PER_KEY = 10;
const PROBES = 7;

let second = 0;

/** Two 32-bit hashes of a stored key (FNV-1a, then a murmur finaliser of it for the probe step). */
export function hashKey(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  let g = h ^ (h >>> 16);
  g = Math.imul(g, 0x85ebca6b);
  g ^= g >>> 13;
  g = Math.imul(g, 0xc2b2ae35);
  g ^= g >>> 16;
  second = g | 1;
  return h >>> 0;
}

/** The probe step of the key last hashed with hashKey. */
export function secondHash(): number {
  return second;
}

class Segment {
  readonly bits: Uint32Array;
  private readonly size: number;
  count = 0;

  constructor(readonly capacity: number) {
    this.size = capacity * BITS_PER_KEY;
    this.bits = new Uint32Array(this.size / 32);
  }

  add(h1: number, h2: number): void {
    for (let i = 0; i < PROBES; i++) {
      const bit = ((h1 + Math.imul(i, h2)) >>> 0) % this.size;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i++) {
      const bit = ((h1 + Math.imul(i, h2)) >>> 0) % this.size;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/**
 * A Bloom filter of the keys written into one overflow generation, so that a cache miss reads only the generations that may
 * hold the key (usually none: just the main area). Heap: about 1.25 bytes per key written into a live generation.
 */
export class KeyFilter {
  private readonly segments: Segment[] = [];

  add(h1: number, h2: number): void {
    let last = this.segments[this.segments.length - 1];
    if (last === undefined || last.count >= last.capacity) {
      last = new Segment(last === undefined ? FIRST_SEGMENT_KEYS : last.capacity * 2);
      this.segments.push(last);
    }
    last.add(h1, h2);
  }

  mayContain(h1: number, h2: number): boolean {
    for (const segment of this.segments) if (segment.has(h1, h2)) return true;
    return false;
  }
}
