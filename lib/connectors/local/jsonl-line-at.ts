import { closeSync, openSync, readSync } from 'node:fs';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const CHUNK = 64 * 1024;

/**
 * The line that starts at byte `offset` of a file (without its terminator) and its 1-based number. For the rare
 * record rejected after it was read (e.g. its timestamp is out of range): it reads the file up to the line's end.
 */
export function readLineAt(path: string, offset: number): { raw: string; line: number } {
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(CHUNK);
    let line = 1;
    for (let pos = 0; pos < offset; ) {
      const n = readSync(fd, chunk, 0, Math.min(CHUNK, offset - pos), pos);
      if (n === 0) break;
      for (let i = chunk.indexOf(NEWLINE); i >= 0 && i < n; i = chunk.indexOf(NEWLINE, i + 1)) line++;
      pos += n;
    }
    const parts: Buffer[] = [];
    for (let pos = offset; ; ) {
      const n = readSync(fd, chunk, 0, CHUNK, pos);
      if (n === 0) break;
      const nl = chunk.subarray(0, n).indexOf(NEWLINE);
      parts.push(Buffer.from(chunk.subarray(0, nl < 0 ? n : nl)));
      if (nl >= 0) break;
      pos += n;
    }
    let bytes = Buffer.concat(parts);
    if (bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN) bytes = bytes.subarray(0, -1);
    return { raw: bytes.toString('utf8'), line };
  } finally {
    closeSync(fd);
  }
}
