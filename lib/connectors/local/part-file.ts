import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { InternalError } from '../../core/index.ts';
import type { PartFilePaths } from './part-file-names.ts';

/**
 * Life of a part file in a two-phase-commit sink: 'in-progress' (open, being written, hidden `.inprogress` name),
 * 'pending' (closed and synced, waiting for its commit under a hidden `.pending` name), 'committed' (renamed to its
 * final name by the committer, from its `PartFileCommittable`).
 */
export type PartFileState = 'in-progress' | 'pending' | 'committed';

/** What committing a pending part file needs; plain data so it can be kept in checkpointed state. */
export interface PartFileCommittable {
  /** Hidden name the file waits under. */
  readonly pendingPath: string;
  /** Name the commit renames it to. */
  readonly finalPath: string;
  /** Exact size in bytes at the pre-commit; the commit checks it. */
  readonly size: number;
}

/** One part file: buffers text and writes it with fs.writeSync (sink writers run on worker threads). */
export class PartFile {
  private fd: number | undefined;
  private buffered = '';
  private flushedBytes = 0;
  private stateNow: PartFileState = 'in-progress';

  private constructor(
    readonly paths: PartFilePaths,
    private readonly bufferSize: number,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Creates the in-progress file; fails rather than overwrite an existing one. */
  static create(paths: PartFilePaths, bufferSize: number): PartFile {
    return new PartFile(paths, bufferSize, openSync(paths.inProgressPath, 'wx'));
  }

  get state(): PartFileState {
    return this.stateNow;
  }

  /** Exact size in bytes of everything appended so far (flushes the buffer first). */
  get size(): number {
    this.flush();
    return this.flushedBytes;
  }

  append(text: string): void {
    if (this.stateNow !== 'in-progress') throw new InternalError(`part file ${this.paths.inProgressPath} is ${this.stateNow}`);
    this.buffered += text;
    if (this.buffered.length >= this.bufferSize) this.flush();
  }

  /**
   * True once the file holds at least `limit` bytes. Characters never outnumber UTF-8 bytes, so the buffer is
   * flushed (to count exact bytes) only when the written bytes plus buffered characters reach the limit.
   */
  reached(limit: number): boolean {
    if (this.flushedBytes + this.buffered.length < limit) return false;
    return this.size >= limit;
  }

  /**
   * Pre-commit: flush, sync, close and rename to the pending name, where the file waits for its commit. The caller
   * syncs the directory before the committable is checkpointed.
   */
  closeForCommit(): PartFileCommittable {
    const size = this.size;
    const fd = this.openFd();
    fsyncSync(fd);
    closeSync(fd);
    this.fd = undefined;
    renameSync(this.paths.inProgressPath, this.paths.pendingPath);
    this.stateNow = 'pending';
    return { pendingPath: this.paths.pendingPath, finalPath: this.paths.finalPath, size };
  }

  /** Failure path: close without flushing; the in-progress file stays for recovery to deal with. */
  abandon(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
    this.buffered = '';
  }

  private flush(): void {
    if (this.buffered.length === 0) return;
    const fd = this.openFd();
    const bytes = Buffer.from(this.buffered, 'utf8');
    // writeSync may write less than asked; loop until all is out.
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
    this.flushedBytes += bytes.length;
    this.buffered = '';
  }

  private openFd(): number {
    if (this.fd === undefined) throw new InternalError(`part file ${this.paths.inProgressPath} is closed`);
    return this.fd;
  }
}
