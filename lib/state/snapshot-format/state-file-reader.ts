import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { StateIoError, StoredStateCorruptError } from './state-errors.ts';
import {
  BLOCK_HEADER_BYTES,
  FILE_PREFIX_BYTES,
  FOOTER_BYTES,
  ROW_KIND,
  STATE_FILE_FOOTER_MAGIC,
  decodeHeader,
  parseFilePrefix,
  type StateFileHeader,
} from './state-file-format.ts';

/** The rows of one block. Buffers are views into the reader's buffer: valid until the next `next()`. */
export interface StateFileRows {
  readonly count: number;
  readonly groupKeys: Buffer[];
  /** undefined: the key has no state (tombstone). */
  readonly values: (Buffer | undefined)[];
}

/** Bytes read from disk at a time; the next chunk is read while the caller processes the current one. */
const CHUNK_BYTES = 4 * 1024 * 1024;

/** Reads a keyed state file block by block (format: state-file-format.ts), verifying every block's CRC. */
export class StateFileReader {
  /** Unparsed bytes: data[at, end) come from the file at `dataPosition`. */
  private data: Buffer = Buffer.alloc(0);
  private at = 0;
  private ahead: Promise<Buffer> | undefined;
  private nextRead: number;
  private eof = false;
  private rowsSeen = 0;
  private blocksSeen = 0;
  private done = false;
  private readonly rows: StateFileRows = { count: 0, groupKeys: [], values: [] };

  private constructor(
    private readonly file: FileHandle,
    private readonly source: string,
    readonly header: StateFileHeader,
    start: number,
  ) {
    this.nextRead = start;
    this.readAhead();
  }

  static async open(path: string, source = path): Promise<StateFileReader> {
    let file: FileHandle;
    try {
      file = await open(path, 'r');
    } catch (cause) {
      throw new StateIoError('open keyed state file', path, cause);
    }
    try {
      const prefix = Buffer.allocUnsafe(FILE_PREFIX_BYTES);
      await readExactly(file, prefix, 0, source);
      const headerLength = parseFilePrefix(prefix, source);
      const body = Buffer.allocUnsafe(headerLength);
      await readExactly(file, body, FILE_PREFIX_BYTES, source);
      return new StateFileReader(file, source, decodeHeader(body, source), FILE_PREFIX_BYTES + headerLength);
    } catch (err) {
      await file.close().catch(() => undefined);
      throw err;
    }
  }

  /** The next block's rows, or undefined after the footer (which must match what was read). */
  async next(): Promise<StateFileRows | undefined> {
    if (this.done) return undefined;
    await this.ensure(BLOCK_HEADER_BYTES);
    const length = this.data.readUInt32BE(this.at);
    if (length === 0) {
      await this.readFooter();
      return undefined;
    }
    const expectedCrc = this.data.readUInt32BE(this.at + 4);
    await this.ensure(BLOCK_HEADER_BYTES + length);
    const start = this.at + BLOCK_HEADER_BYTES;
    const payload = this.data.subarray(start, start + length);
    this.at = start + length;
    if (crc32(payload) !== expectedCrc) throw this.corrupt(`block ${this.blocksSeen + 1} fails its CRC-32 check`);
    this.blocksSeen++;
    return this.parse(payload);
  }

  async close(): Promise<void> {
    await this.ahead?.catch(() => undefined);
    await this.file.close().catch(() => undefined);
  }

  private parse(payload: Buffer): StateFileRows {
    const rows = this.rows as { count: number; groupKeys: Buffer[]; values: (Buffer | undefined)[] };
    rows.groupKeys.length = 0;
    rows.values.length = 0;
    let at = 0;
    const end = payload.length;
    while (at < end) {
      if (payload[at] !== ROW_KIND || at + 3 > end) throw this.corrupt(`block ${this.blocksSeen} holds an unknown record`);
      const keyLength = payload.readUInt16BE(at + 1);
      const keyStart = at + 3;
      const valueAt = keyStart + keyLength;
      if (valueAt + 4 > end || keyLength < 3) throw this.corrupt(`block ${this.blocksSeen} holds a truncated row`);
      const valueLength = payload.readUInt32BE(valueAt);
      const valueEnd = valueAt + 4 + valueLength;
      if (valueEnd > end) throw this.corrupt(`block ${this.blocksSeen} holds a truncated row`);
      rows.groupKeys.push(payload.subarray(keyStart, valueAt));
      rows.values.push(valueLength === 0 ? undefined : payload.subarray(valueAt + 4, valueEnd));
      at = valueEnd;
    }
    rows.count = rows.groupKeys.length;
    this.rowsSeen += rows.count;
    return rows;
  }

  private async readFooter(): Promise<void> {
    await this.ensure(FOOTER_BYTES);
    const footer = this.data.subarray(this.at, this.at + FOOTER_BYTES);
    const rows = footer.readUInt32BE(4) * 0x100000000 + footer.readUInt32BE(8);
    const blocks = footer.readUInt32BE(12);
    if (!footer.subarray(16, 20).equals(STATE_FILE_FOOTER_MAGIC) || rows !== this.rowsSeen || blocks !== this.blocksSeen) {
      throw this.corrupt(`its footer announces ${rows} rows in ${blocks} blocks, but ${this.rowsSeen} in ${this.blocksSeen} were read`);
    }
    this.at += FOOTER_BYTES;
    if (this.data.length > this.at || (await this.more()).length > 0) throw this.corrupt('it has bytes after its footer');
    this.done = true;
  }

  /** Makes at least `length` unparsed bytes available (fewer only at the end of the file: then it is truncated). */
  private async ensure(length: number): Promise<void> {
    while (this.data.length - this.at < length) {
      const chunk = await this.more();
      if (chunk.length === 0) throw new StoredStateCorruptError(this.source, 'it ends early (truncated)');
      const rest = this.data.subarray(this.at);
      // Earlier rows keep pointing into the old buffer: it is replaced, never overwritten.
      this.data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      this.at = 0;
    }
  }

  /** The chunk read ahead (empty at the end of the file); starts reading the one after it. */
  private async more(): Promise<Buffer> {
    if (this.ahead === undefined) return Buffer.alloc(0);
    const chunk = await this.ahead;
    this.ahead = undefined;
    if (!this.eof) this.readAhead();
    return chunk;
  }

  private readAhead(): void {
    const position = this.nextRead;
    this.nextRead += CHUNK_BYTES;
    this.ahead = (async () => {
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let read = 0;
      try {
        while (read < CHUNK_BYTES) {
          const { bytesRead } = await this.file.read(buffer, read, CHUNK_BYTES - read, position + read);
          if (bytesRead === 0) break;
          read += bytesRead;
        }
      } catch (cause) {
        throw new StateIoError('read keyed state file', this.source, cause);
      }
      if (read < CHUNK_BYTES) this.eof = true;
      return buffer.subarray(0, read);
    })();
    // A failed read surfaces when the chunk is needed, not as an unhandled rejection.
    this.ahead.catch(() => undefined);
  }

  private corrupt(problem: string): StoredStateCorruptError {
    return new StoredStateCorruptError(this.source, problem);
  }
}

async function readExactly(file: FileHandle, into: Buffer, position: number, source: string): Promise<void> {
  let read = 0;
  while (read < into.length) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await file.read(into, read, into.length - read, position + read));
    } catch (cause) {
      throw new StateIoError('read keyed state file', source, cause);
    }
    if (bytesRead === 0) throw new StoredStateCorruptError(source, 'it ends early (truncated)');
    read += bytesRead;
  }
}
