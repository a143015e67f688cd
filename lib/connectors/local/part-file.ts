import { closeSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { InternalError } from '../../core/index.ts';

/**
 * Life of a part file, shaped for a two-phase-commit sink: 'in-progress' (open, being written, hidden name),
 * 'pending' (closed and synced, waiting for its commit), 'committed' (renamed to its final name).
 */
export type PartFileState = 'in-progress' | 'pending' | 'committed';

/** What committing a pending part file needs; plain data so it can be kept in checkpointed state. */
export interface PartFileCommittable {
  readonly inProgressPath: string;
  readonly finalPath: string;
  readonly size: number;
}

/** Final and in-progress names of part `n` of a subtask: `part-0-3.jsonl` and `.part-0-3.jsonl.inprogress`. */
export function partFileNames(dir: string, prefix: string, subtask: number, n: number): { finalPath: string; inProgressPath: string } {
  const name = `${prefix}-${subtask}-${n}.jsonl`;
  return { finalPath: join(dir, name), inProgressPath: join(dir, `.${name}.inprogress`) };
}

/** The first part number of a subtask past every part it left in `dir` (committed or not), so nothing is overwritten. */
export function nextPartNumber(dir: string, prefix: string, subtask: number): number {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`^\\.?${escaped}-${subtask}-(\\d+)\\.jsonl(\\..*)?$`);
  let next = 0;
  for (const name of readdirSync(dir)) {
    const match = pattern.exec(name);
    if (match !== null) next = Math.max(next, Number(match[1]) + 1);
  }
  return next;
}

/** One part file: buffers text and writes it with fs.writeSync (sink writers run on worker threads). */
export class PartFile {
  private fd: number | undefined;
  private buffered = '';
  private flushedBytes = 0;
  private stateNow: PartFileState = 'in-progress';

  private constructor(
    readonly finalPath: string,
    readonly inProgressPath: string,
    private readonly bufferSize: number,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Creates the in-progress file; fails rather than overwrite an existing one. */
  static create(finalPath: string, inProgressPath: string, bufferSize: number): PartFile {
    return new PartFile(finalPath, inProgressPath, bufferSize, openSync(inProgressPath, 'wx'));
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
    if (this.stateNow !== 'in-progress') throw new InternalError(`part file ${this.inProgressPath} is ${this.stateNow}`);
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

  /** Pre-commit: flush, sync and close; the file stays under its in-progress name until `commitPartFile`. */
  closeForCommit(): PartFileCommittable {
    const size = this.size;
    const fd = this.openFd();
    fsyncSync(fd);
    closeSync(fd);
    this.fd = undefined;
    this.stateNow = 'pending';
    return { inProgressPath: this.inProgressPath, finalPath: this.finalPath, size };
  }

  markCommitted(): void {
    if (this.stateNow !== 'pending') throw new InternalError(`part file ${this.inProgressPath} committed while ${this.stateNow}`);
    this.stateNow = 'committed';
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
    if (this.fd === undefined) throw new InternalError(`part file ${this.inProgressPath} is closed`);
    return this.fd;
  }
}

/**
 * Commit: rename the pending file to its final name. Idempotent, as a commit replayed after a restore must be:
 * when the in-progress file is gone and the final one exists, the commit already happened.
 */
export function commitPartFile(committable: PartFileCommittable): void {
  if (!existsSync(committable.inProgressPath) && existsSync(committable.finalPath)) return;
  renameSync(committable.inProgressPath, committable.finalPath);
}
