import { EventRandom } from './event-random.ts';
import { MAX_AVG_BYTE_SIZE } from './config.ts';

/**
 * Beam's StringsGenerator, drawn from pools instead of built character by character: a string is a window of a
 * fixed random pool at a random offset. Each character is still uniformly random ('a'..'z', and in `nextString`
 * a space with probability 1/13), lengths follow Beam exactly, and V8 represents a long window as a slice of the
 * pool, so padding an event to its reference size costs no copy.
 */

const POOL_LENGTH = 1 << 17;
const MIN_STRING_LENGTH = 3;

function buildPool(seed: number, withSpaces: boolean): string {
  const random = new EventRandom();
  random.setSeed(seed);
  random.reset(0);
  // Room past the last start offset for the longest padding (+20%) of the largest average size.
  const codes = new Uint8Array(POOL_LENGTH + 2 * MAX_AVG_BYTE_SIZE);
  for (let i = 0; i < codes.length; i++) {
    codes[i] = withSpaces && random.nextInt(13) === 0 ? 32 : 97 + random.nextInt(26);
  }
  // One flat one-byte string, so that every window of it can be a slice.
  return Buffer.from(codes).toString('latin1');
}

const WORDS = buildPool(0x5eed01, true);
const LETTERS = buildPool(0x5eed02, false);

/** A random string of length 3..maxLength-1 (letters and some spaces), trimmed as in Beam. */
export function nextString(random: EventRandom, maxLength: number): string {
  const length = MIN_STRING_LENGTH + random.nextInt(maxLength - MIN_STRING_LENGTH);
  const start = random.nextInt(POOL_LENGTH);
  return WORDS.substring(start, start + length).trim();
}

/** A random string of exactly `length` letters. */
export function nextExactString(random: EventRandom, length: number): string {
  const start = random.nextInt(POOL_LENGTH);
  return LETTERS.substring(start, start + length);
}

/** Padding such that currentSize + its length is on average `averageSize` (Beam's nextExtra: +-20%). */
export function nextExtra(random: EventRandom, currentSize: number, averageSize: number): string {
  if (currentSize > averageSize) return '';
  const desired = averageSize - currentSize;
  const delta = Math.round(desired * 0.2);
  const size = desired - delta + (delta === 0 ? 0 : random.nextInt(2 * delta));
  return nextExactString(random, size);
}

const FOUR_DIGITS: string[] = Array.from({ length: 10000 }, (_, i) => String(i).padStart(4, '0'));

/** Four groups of four digits. */
export function nextCreditCard(random: EventRandom): string {
  return `${FOUR_DIGITS[random.nextInt(10000)]} ${FOUR_DIGITS[random.nextInt(10000)]} ${FOUR_DIGITS[random.nextInt(10000)]} ${FOUR_DIGITS[random.nextInt(10000)]}`;
}
