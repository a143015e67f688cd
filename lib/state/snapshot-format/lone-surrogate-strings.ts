import { addExtension, type Packr } from 'msgpackr';

/**
 * msgpack strings are UTF-8, which cannot hold a lone surrogate ("\uD800x", as a JSON "\ud800" escape reads):
 * msgpackr writes U+FFFD for it, so state holding such a string (a key, a value) would change on its way through a
 * checkpoint or RocksDB, and two distinct keys could become one. Such strings are written instead as a msgpack
 * extension holding their UTF-16 code units, which msgpackr reads back as the same string. Import this module
 * before constructing a Packr that should know the extension.
 */

/** msgpack extension type of a string stored as UTF-16LE code units ('W'; msgpackr's own types are elsewhere). */
const UTF16_STRING_EXTENSION = 0x57;

class Utf16String {
  constructor(readonly value: string) {}
}

addExtension({
  Class: Utf16String,
  type: UTF16_STRING_EXTENSION,
  pack: (s: Utf16String) => Buffer.from(s.value, 'utf16le'),
  unpack: (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf16le'),
});

/** Every lone surrogate leaves these bytes in msgpackr's encoding (real U+FFFD characters do too). */
const REPLACEMENT_CHARACTER_UTF8 = Buffer.from([0xef, 0xbf, 0xbd]);

/** Whether `text` has a lone surrogate (String.prototype.isWellFormed is newer than the ES2023 typings). */
const hasLoneSurrogate = (text: string): boolean => !(text as unknown as { isWellFormed(): boolean }).isWellFormed();

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** The objects a value is made of that the packers look into: arrays, plain objects, Maps and Sets. */
function children(value: object): Iterable<unknown> | undefined {
  if (Array.isArray(value)) return value as unknown[];
  if (value instanceof Map) return [...(value as Map<unknown, unknown>)].flat();
  if (value instanceof Set) return value as Set<unknown>;
  return isPlainObject(value) ? Object.values(value) : undefined;
}

/** Whether a string with a lone surrogate is anywhere in `value` (each object looked at once: cycles end). */
function holdsLoneSurrogate(value: unknown, visited: Set<object>): boolean {
  if (typeof value === 'string') return hasLoneSurrogate(value);
  if (typeof value !== 'object' || value === null || visited.has(value)) return false;
  visited.add(value);
  for (const child of children(value) ?? []) if (holdsLoneSurrogate(child, visited)) return true;
  return false;
}

/**
 * A copy of `value` with every string that holds a lone surrogate wrapped for the extension. Each object is copied
 * once and registered before its contents, so shared references stay shared and cycles stay cycles (the
 * structured-clone packers keep both). An object key with a lone surrogate stays a key: msgpack keys are strings.
 */
function wrapLoneSurrogates(value: unknown, copies: Map<object, unknown>): unknown {
  if (typeof value === 'string') return hasLoneSurrogate(value) ? new Utf16String(value) : value;
  if (typeof value !== 'object' || value === null) return value;
  const known = copies.get(value);
  if (known !== undefined) return known;
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array<unknown>(value.length);
    copies.set(value, copy);
    for (let i = 0; i < value.length; i++) copy[i] = wrapLoneSurrogates(value[i], copies);
    return copy;
  }
  if (value instanceof Map) {
    const copy = new Map<unknown, unknown>();
    copies.set(value, copy);
    for (const [k, v] of value as Map<unknown, unknown>) copy.set(wrapLoneSurrogates(k, copies), wrapLoneSurrogates(v, copies));
    return copy;
  }
  if (value instanceof Set) {
    const copy = new Set<unknown>();
    copies.set(value, copy);
    for (const v of value as Set<unknown>) copy.add(wrapLoneSurrogates(v, copies));
    return copy;
  }
  if (!isPlainObject(value)) return value;
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
  copies.set(value, copy);
  for (const key of Object.keys(value)) copy[key] = wrapLoneSurrogates(value[key], copies);
  return copy;
}

/**
 * `packr.pack(value)`, keeping strings with lone surrogates as they are. Costs one native byte search over the
 * encoding when there are none; when U+FFFD bytes turn up, a walk over the value, and a copy and a second pack only
 * if it holds a lone surrogate. The result is a view into the packer's buffer, as `pack`'s is.
 */
export function packKeepingLoneSurrogates(packr: Packr, value: unknown): Buffer {
  const packed = packr.pack(value);
  if (packed.indexOf(REPLACEMENT_CHARACTER_UTF8) < 0) return packed;
  if (!holdsLoneSurrogate(value, new Set())) return packed;
  return packr.pack(wrapLoneSurrogates(value, new Map()));
}
