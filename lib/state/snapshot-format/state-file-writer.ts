import { open, rm, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { StateIoError } from './state-errors.ts';
import {
  BLOCK_HEADER_BYTES,
  FOOTER_BYTES,
  MAX_GROUP_KEY_BYTES,
  ROW_KIND,
  ROW_OVERHEAD_BYTES,
  STATE_FILE_FOOTER_MAGIC,
  encodeFilePrefix,
  type StateFileHeader,
} from './state-file-format.ts';

/** Target payload of one block: big enough for few syscalls, small enough to verify and parse in one piece. */
const BLOCK_BYTES = 256 * 1024;
/** Completed blocks are written once this much is waiting. */
const WRITE_AFTER_BYTES = 4 * 1024 * 1024;

/**
 * Streams rows into a keyed state file (format: state-file-format.ts). `addRow` is synchronous and buffers; the
 * caller awaits `drain()` whenever `needsDrain` is true, so memory stays at a few MiB whatever the file size.
 */
export class StateFileWriter {
  private block: Buffer = Buffer.allocUnsafe(BLOCK_HEADER_BYTES + BLOCK_BYTES);
  private used = BLOCK_HEADER_BYTES;
  private readonly ready: Buffer[] = [];
  private readyBytes = 0;
  private written = 0;
  private rowCount = 0;
  private blockCount = 0;

  private constructor(
    readonly path: string,
    private readonly file: FileHandle,
  ) {}

  static async create(path: string, header: StateFileHeader): Promise<StateFileWriter> {
    let file: FileHandle;
    try {
      file = await open(path, 'w');
    } catch (cause) {
      throw new StateIoError('create keyed state file', path, cause);
    }
    const writer = new StateFileWriter(path, file);
    const prefix = encodeFilePrefix(header);
    writer.ready.push(prefix);
    writer.readyBytes += prefix.length;
    return writer;
  }

  get rows(): number {
    return this.rowCount;
  }

  get needsDrain(): boolean {
    return this.readyBytes >= WRITE_AFTER_BYTES;
  }

  /** `groupKey` = key group (u16) + key bytes; `value` undefined or empty = the key has no state. */
  addRow(groupKey: Uint8Array, value: Uint8Array | undefined): void {
    if (groupKey.length > MAX_GROUP_KEY_BYTES) {
      throw new RangeError(`a state key of ${groupKey.length} bytes is longer than the ${MAX_GROUP_KEY_BYTES} a state file allows`);
    }
    const valueLength = value === undefined ? 0 : value.length;
    const size = ROW_OVERHEAD_BYTES + groupKey.length + valueLength;
    if (this.used + size > this.block.length) {
      this.sealBlock();
      if (BLOCK_HEADER_BYTES + size > this.block.length) this.block = Buffer.allocUnsafe(BLOCK_HEADER_BYTES + size);
    }
    const block = this.block;
    let at = this.used;
    block[at] = ROW_KIND;
    block.writeUInt16BE(groupKey.length, at + 1);
    block.set(groupKey, at + 3);
    at += 3 + groupKey.length;
    block.writeUInt32BE(valueLength, at);
    if (value !== undefined && valueLength > 0) block.set(value, at + 4);
    this.used = at + 4 + valueLength;
    this.rowCount++;
  }

  async drain(): Promise<void> {
    if (this.ready.length === 0) return;
    const buffers = this.ready.splice(0);
    const bytes = this.readyBytes;
    this.readyBytes = 0;
    try {
      await this.file.writev(buffers);
    } catch (cause) {
      throw new StateIoError('write keyed state file', this.path, cause);
    }
    this.written += bytes;
  }

  /**
   * Writes the rest and the footer and closes. Returns the file's size. `sync: false` leaves the fsync to whoever
   * makes the file durable where it ends up (a shared state store's `put` does), rather than syncing it twice.
   */
  async finish(options: { readonly sync?: boolean } = {}): Promise<number> {
    this.sealBlock();
    const footer = Buffer.alloc(FOOTER_BYTES);
    footer.writeUInt32BE(0, 0);
    footer.writeUInt32BE(Math.floor(this.rowCount / 0x100000000), 4);
    footer.writeUInt32BE(this.rowCount >>> 0, 8);
    footer.writeUInt32BE(this.blockCount, 12);
    STATE_FILE_FOOTER_MAGIC.copy(footer, 16);
    this.ready.push(footer);
    this.readyBytes += footer.length;
    await this.drain();
    try {
      if (options.sync !== false) await this.file.sync();
      await this.file.close();
    } catch (cause) {
      throw new StateIoError('close keyed state file', this.path, cause);
    }
    return this.written;
  }

  /** Closes and deletes a file that will not be finished. */
  async abort(): Promise<void> {
    await this.file.close().catch(() => undefined);
    await rm(this.path, { force: true }).catch(() => undefined);
  }

  private sealBlock(): void {
    const payload = this.used - BLOCK_HEADER_BYTES;
    if (payload === 0) return;
    const block = this.block.subarray(0, this.used);
    block.writeUInt32BE(payload, 0);
    block.writeUInt32BE(crc32(block.subarray(BLOCK_HEADER_BYTES)), 4);
    this.ready.push(block);
    this.readyBytes += block.length;
    this.blockCount++;
    this.block = Buffer.allocUnsafe(BLOCK_HEADER_BYTES + BLOCK_BYTES);
    this.used = BLOCK_HEADER_BYTES;
  }
}
