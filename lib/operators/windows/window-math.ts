/**
 * Start of the window of length `size` (aligned so that starts are congruent to `offset` modulo `size`) that
 * contains `timestamp`. JS `%` keeps the sign of the dividend, so negative timestamps need the extra step.
 */
export function windowStart(timestamp: number, offset: number, size: number): number {
  const remainder = (timestamp - offset) % size;
  return remainder < 0 ? timestamp - (remainder + size) : timestamp - remainder;
}

export function greatestCommonDivisor(a: number, b: number): number {
  while (b !== 0) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}
