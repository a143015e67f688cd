import { SluiceError } from './errors.ts';
import type { Key } from './key-group.ts';

/**
 * The one rule for keys, applied wherever a key selector's result enters the engine (keyBy's partitioner, keyed
 * operators, joins, windows): a string, or a finite number. NaN and ±Infinity are refused because their hash
 * text ("NaN", "Infinity") would silently merge unrelated records, and NaN never equals itself as a Map key.
 */
export function isValidKey(key: unknown): key is Key {
  return typeof key === 'string' || (typeof key === 'number' && Number.isFinite(key));
}

/** A key selector returned something that is not a key; the caller wraps it with the operator and record origin. */
export class InvalidKeyError extends SluiceError {
  readonly key: unknown;

  constructor(key: unknown) {
    super('INVALID_KEY', `the key selector returned ${describeValue(key)} (${typeof key}); keys must be strings or finite numbers`, {
      retriable: false,
    });
    this.key = key;
  }
}

/** Returns `key` if it is valid, else throws InvalidKeyError. */
export function checkKey(key: unknown): Key {
  if (!isValidKey(key)) throw new InvalidKeyError(key);
  return key;
}

function describeValue(value: unknown): string {
  try {
    return String(value);
  } catch {
    // An object whose toString throws, or one without a prototype: its type says enough.
    return 'a value';
  }
}
