/**
 * MD5 of a string's UTF-8 bytes in plain JavaScript, for the short strings that partition keys are. Node's
 * crypto costs one native call per digest (about 1-2 microseconds on a loaded machine); this is several times
 * faster for keys of a few dozen bytes, which matters when every record's key is hashed. Checked against
 * node:crypto in test/unit/core/md5.test.ts.
 */

const S = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21];
const K = new Int32Array(64);
for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 4294967296) | 0;

const encoder = new TextEncoder();
/** Reused across calls (one thread runs one call at a time); grown for long keys. */
let bytes = new Uint8Array(256);
const words = new Int32Array(16);

/** The four little-endian state words a, b, c, d of MD5(UTF-8 of `text`), written to `out`. */
export function md5Words(text: string, out: Int32Array): void {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit; 72 more for padding and length.
  const need = text.length * 3 + 72;
  if (bytes.length < need) bytes = new Uint8Array(need * 2);
  let n: number;
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    n = text.length;
  } else {
    n = encoder.encodeInto(text, bytes).written;
  }
  const blocks = ((n + 8) >>> 6) + 1;
  const total = blocks * 64;
  bytes[n] = 0x80;
  bytes.fill(0, n + 1, total);
  const bitLength = n * 8;
  bytes[total - 8] = bitLength & 0xff;
  bytes[total - 7] = (bitLength >>> 8) & 0xff;
  bytes[total - 6] = (bitLength >>> 16) & 0xff;
  bytes[total - 5] = (bitLength >>> 24) & 0xff;
  // Keys are far below 2^29 bytes: the length's upper 32 bits stay 0.
  let a0 = 0x67452301;
  let b0 = 0xefcdab89 | 0;
  let c0 = 0x98badcfe | 0;
  let d0 = 0x10325476;
  for (let block = 0; block < blocks; block++) {
    const base = block * 64;
    for (let i = 0; i < 16; i++) {
      const j = base + i * 4;
      words[i] = (bytes[j] as number) | ((bytes[j + 1] as number) << 8) | ((bytes[j + 2] as number) << 16) | ((bytes[j + 3] as number) << 24);
    }
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number;
      let g: number;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      const t = d;
      d = c;
      c = b;
      const x = (a + f + (K[i] as number) + (words[g] as number)) | 0;
      const s = S[i] as number;
      b = (b + ((x << s) | (x >>> (32 - s)))) | 0;
      a = t;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  out[0] = a0;
  out[1] = b0;
  out[2] = c0;
  out[3] = d0;
}

/** The 16-byte MD5 digest of the UTF-8 bytes of `text`. */
export function md5(text: string): Uint8Array {
  const w = new Int32Array(4);
  md5Words(text, w);
  // The digest is the state words in little-endian byte order.
  return new Uint8Array(w.buffer);
}
