import { closeSync, openSync, readSync } from 'node:fs';
import { ConfigError } from '../../core/index.ts';
import type { Clock } from '../../core/index.ts';
import type { DeadLetterFile } from './dead-letter-file.ts';
import type { JsonlFileSplit } from './jsonl-file-split.ts';

/** Counters of one source reader (all its splits). */
export interface JsonlSourceCounters {
  /** Records returned in batches. */
  recordsRead: number;
  /** Malformed lines: written to the dead-letter file, or counted and logged when there is none. */
  deadLetters: number;
  /** Bytes read from the input files (including bytes read past a split's end to finish its last line). */
  bytesRead: number;
}

export interface JsonlSplitReaderOptions<T> {
  readonly parse: ((value: unknown) => T) | undefined;
  readonly readChunkBytes: number;
  readonly deadLetters: DeadLetterFile | undefined;
  /** How the user sets the dead-letter file, named in the hint when malformed lines are only counted. */
  readonly deadLetterLabel: string;
  readonly counters: JsonlSourceCounters;
  readonly clock: Clock;
  /** Follow mode only: end the split after this long without growth (undefined: never). */
  readonly idleTimeoutMs: number | undefined;
}

/** What a `read` call ended with. */
export type SplitReadStatus = 'full' | 'starved' | 'done';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 13;
const BYTE_ORDER_MARK = 0xfeff;
/** Reads near a split's end fetch at least this much, so the line crossing the end rarely takes several reads. */
const MIN_TAIL_READ = 64 * 1024;

/**
 * Reads the lines of one split. Bytes are read in large chunks; the complete lines of a chunk are decoded to one
 * string and cut with indexOf, so the per-line cost is one substring and JSON.parse. Byte offsets come for free
 * while a chunk is ASCII (character index = byte index); otherwise newlines are also located in the bytes.
 */
export class JsonlSplitReader<T> {
  private readonly fd: number;
  private readonly end: number;
  private readonly follow: boolean;
  private buf: Buffer;
  /** File offset of buf[0]. buf[0] is always the start of the next unread line (or of the skipped prefix). */
  private bufFileOffset: number;
  private bufLen = 0;
  /** Bytes of buf decoded into `str`: always whole lines. */
  private decodedEnd = 0;
  private str = '';
  private charPos = 0;
  private bytePos = 0;
  private ascii = true;
  /** Skipping the tail of a line that started before the split. */
  private skipping: boolean;
  private eof = false;
  private finished = false;
  private lastGrowth: number;
  /** Lines consumed since the first owned line (blank and malformed ones included), for line numbers. */
  private linesConsumed = 0;
  private firstLine: number | undefined;
  private firstLineStart: number | undefined;
  private malformed = 0;
  private firstMalformed: { offset: number; error: string } | undefined;
  private malformedLogged = false;
  /** Start of the line the last `read` began with, and `linesConsumed` then: locates its records' line numbers. */
  private readStart: { offset: number; linesConsumed: number } | undefined;

  constructor(
    readonly split: JsonlFileSplit,
    private readonly options: JsonlSplitReaderOptions<T>,
  ) {
    try {
      this.fd = openSync(split.path, 'r');
    } catch (err) {
      throw new ConfigError(`JSONL source: cannot open input file "${split.path}" (split ${split.id})`, { cause: err });
    }
    this.end = split.end ?? Number.POSITIVE_INFINITY;
    this.follow = split.end === null;
    this.buf = Buffer.allocUnsafe(options.readChunkBytes);
    this.bufFileOffset = split.start;
    this.skipping = split.start > 0 && !this.precededByNewline(split.start);
    if (!this.skipping) {
      this.firstLineStart = split.start;
      this.firstLine = split.line;
    }
    this.lastGrowth = options.clock.now();
  }

  get done(): boolean {
    return this.finished;
  }

  /** The split with its start moved to the next unread line, for checkpoints. */
  position(): JsonlFileSplit {
    if (this.firstLineStart === undefined) return this.split;
    const start = this.bufFileOffset + this.bytePos;
    const base: JsonlFileSplit = { id: this.split.id, path: this.split.path, start, end: this.split.end };
    return this.firstLine === undefined ? base : { ...base, line: this.firstLine + this.linesConsumed };
  }

  /**
   * Appends up to `max - values.length` records of this split. Returns 'full' when `values` reached `max`,
   * 'starved' in follow mode when no complete line is available now, and 'done' when the split has ended.
   */
  read(max: number, values: T[], offsets: number[]): SplitReadStatus {
    const parse = this.options.parse;
    const counters = this.options.counters;
    const before = values.length;
    if (this.firstLineStart !== undefined) {
      this.readStart = { offset: this.bufFileOffset + this.bytePos, linesConsumed: this.linesConsumed };
    }
    let status: SplitReadStatus = 'full';
    while (values.length < max) {
      if (this.charPos >= this.str.length) {
        if (!this.refill()) {
          status = this.finished ? 'done' : 'starved';
          break;
        }
        continue;
      }
      const lineStart = this.bufFileOffset + this.bytePos;
      if (lineStart >= this.end) {
        this.finish();
        status = 'done';
        break;
      }
      const str = this.str;
      const from = this.charPos;
      const nl = str.indexOf('\n', from);
      const to = nl < 0 ? str.length : nl;
      this.charPos = to + 1;
      if (nl < 0) this.bytePos = this.decodedEnd;
      else if (this.ascii) this.bytePos = to + 1;
      else this.bytePos = this.buf.indexOf(NEWLINE, this.bytePos) + 1;
      this.linesConsumed++;
      if (to === from) continue;
      let line = str.slice(from, to);
      if (lineStart === 0 && line.charCodeAt(0) === BYTE_ORDER_MARK) line = line.slice(1);
      let value: T;
      try {
        value = JSON.parse(line) as T;
        if (parse !== undefined) value = parse(value);
      } catch (err) {
        if (line.trim().length > 0) this.reject(line, lineStart, err);
        continue;
      }
      values.push(value);
      offsets.push(lineStart);
    }
    counters.recordsRead += values.length - before;
    return status;
  }

  close(): void {
    this.finish();
  }

  /**
   * Sends the record at byte `offset`, returned by the last `read`, to the dead letters with `reason` (e.g. an
   * invalid event timestamp found after parsing). The line is read again from the file: this is rare, so nothing
   * is kept per record for it. False when there is no dead-letter file or the offset is not of the last read.
   */
  rejectRecord(offset: number, reason: string): boolean {
    if (this.options.deadLetters === undefined || this.firstLineStart === undefined) return false;
    const start = this.readStart ?? { offset: this.firstLineStart, linesConsumed: 0 };
    if (offset < start.offset) return false;
    // A separate descriptor: the split's own is closed once the split is read to its end.
    const fd = openSync(this.split.path, 'r');
    let line: number;
    let raw: string;
    try {
      this.firstLine ??= 1 + this.countNewlines(fd, 0, this.firstLineStart);
      line = this.firstLine + start.linesConsumed + this.countNewlines(fd, start.offset, offset);
      raw = this.readLineAt(fd, offset);
    } finally {
      closeSync(fd);
    }
    this.options.counters.recordsRead--;
    this.reject(raw, offset, reason, line);
    return true;
  }

  /** Reads more bytes until `str` holds at least one whole line; false when there is none (now, or ever). */
  private refill(): boolean {
    if (this.finished) return false;
    this.discardDecoded();
    if (this.eof) {
      this.finish();
      return false;
    }
    for (;;) {
      if (this.bufLen === this.buf.length) this.grow();
      const readPos = this.bufFileOffset + this.bufLen;
      let want = this.buf.length - this.bufLen;
      // Bounded splits stop reading near their end; past it (finishing a long line) reads grow with the line.
      if (!this.follow) want = Math.min(want, Math.max(this.end - readPos, MIN_TAIL_READ, this.bufLen));
      const n = readSync(this.fd, this.buf, this.bufLen, want, readPos);
      if (n === 0) return this.atEndOfFile();
      this.options.counters.bytesRead += n;
      this.lastGrowth = this.options.clock.now();
      // Bytes kept from earlier reads hold no newline, so only the new ones need a look.
      let scanFrom = this.bufLen;
      this.bufLen += n;
      if (this.skipping) {
        if (!this.skipPartialLine()) continue;
        scanFrom = 0;
      }
      const last = this.buf.subarray(scanFrom, this.bufLen).lastIndexOf(NEWLINE);
      if (last >= 0) {
        this.decode(scanFrom + last + 1);
        return true;
      }
    }
  }

  /** Drops the skipped prefix once its newline is in the buffer; false while it is not. */
  private skipPartialLine(): boolean {
    const nl = this.buf.subarray(0, this.bufLen).indexOf(NEWLINE);
    if (nl < 0) {
      this.bufFileOffset += this.bufLen;
      this.bufLen = 0;
      return false;
    }
    this.buf.copy(this.buf, 0, nl + 1, this.bufLen);
    this.bufFileOffset += nl + 1;
    this.bufLen -= nl + 1;
    this.skipping = false;
    this.firstLineStart = this.bufFileOffset;
    return true;
  }

  private atEndOfFile(): boolean {
    if (this.follow && !this.idleTimedOut()) return false;
    this.eof = true;
    if (this.bufLen > 0 && !this.skipping) {
      // The last line has no newline: it is complete now that the file has ended.
      this.decode(this.bufLen);
      return true;
    }
    this.finish();
    return false;
  }

  private idleTimedOut(): boolean {
    const idle = this.options.idleTimeoutMs;
    return idle !== undefined && this.options.clock.now() - this.lastGrowth >= idle;
  }

  private decode(byteEnd: number): void {
    this.str = this.buf.toString('utf8', 0, byteEnd);
    this.ascii = this.str.length === byteEnd;
    this.decodedEnd = byteEnd;
    this.charPos = 0;
    this.bytePos = 0;
  }

  private discardDecoded(): void {
    if (this.decodedEnd > 0) {
      this.buf.copy(this.buf, 0, this.decodedEnd, this.bufLen);
      this.bufFileOffset += this.decodedEnd;
      this.bufLen -= this.decodedEnd;
      this.decodedEnd = 0;
    }
    this.str = '';
    this.charPos = 0;
    this.bytePos = 0;
  }

  private grow(): void {
    const bigger = Buffer.allocUnsafe(this.buf.length * 2);
    this.buf.copy(bigger, 0, 0, this.bufLen);
    this.buf = bigger;
  }

  private precededByNewline(offset: number): boolean {
    const one = Buffer.alloc(1);
    return readSync(this.fd, one, 0, 1, offset - 1) === 1 && one[0] === NEWLINE;
  }

  private reject(line: string, offset: number, err: unknown, lineNumber?: number): void {
    this.malformed++;
    this.options.counters.deadLetters++;
    const error = err instanceof Error ? err.message : String(err);
    const deadLetters = this.options.deadLetters;
    if (deadLetters === undefined) {
      this.firstMalformed ??= { offset, error };
      return;
    }
    const raw = line.charCodeAt(line.length - 1) === CARRIAGE_RETURN ? line.slice(0, -1) : line;
    deadLetters.append({ file: this.split.path, line: lineNumber ?? this.currentLineNumber(), offset, error, raw });
  }

  /** Line number of the line consumed last; counts the newlines before the split on first use only. */
  private currentLineNumber(): number {
    if (this.firstLine === undefined) this.firstLine = 1 + this.countNewlines(this.fd, 0, this.firstLineStart ?? 0);
    return this.firstLine + this.linesConsumed - 1;
  }

  /** Newlines in bytes [from, to) of the file open as `fd`. */
  private countNewlines(fd: number, from: number, to: number): number {
    const chunk = Buffer.allocUnsafe(Math.min(this.options.readChunkBytes, Math.max(to - from, 1)));
    let count = 0;
    let pos = from;
    while (pos < to) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, to - pos), pos);
      if (n === 0) break;
      const view = n === chunk.length ? chunk : chunk.subarray(0, n);
      for (let i = view.indexOf(NEWLINE); i >= 0; i = view.indexOf(NEWLINE, i + 1)) count++;
      pos += n;
    }
    return count;
  }

  /** The line starting at byte `offset`, without its terminator (and without a byte order mark at 0). */
  private readLineAt(fd: number, offset: number): string {
    const chunk = Buffer.allocUnsafe(Math.min(this.options.readChunkBytes, MIN_TAIL_READ));
    const parts: Buffer[] = [];
    for (let pos = offset; ; ) {
      const n = readSync(fd, chunk, 0, chunk.length, pos);
      if (n === 0) break;
      const nl = chunk.subarray(0, n).indexOf(NEWLINE);
      parts.push(Buffer.from(chunk.subarray(0, nl < 0 ? n : nl)));
      if (nl >= 0) break;
      pos += n;
    }
    let line = Buffer.concat(parts).toString('utf8');
    if (offset === 0 && line.charCodeAt(0) === BYTE_ORDER_MARK) line = line.slice(1);
    return line;
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    closeSync(this.fd);
    if (this.malformed > 0 && this.options.deadLetters === undefined && !this.malformedLogged) {
      this.malformedLogged = true;
      const first = this.firstMalformed;
      process.stderr.write(
        `sluice: JSONL source skipped ${this.malformed} malformed line(s) in split ${this.split.id}` +
          (first === undefined ? '' : ` (first at byte offset ${first.offset}: ${first.error})`) +
          `; ${keepHint(this.options.deadLetterLabel)}\n`,
      );
    }
  }
}

/** `--dead-letter` (a flag) reads "pass --dead-letter FILE"; an option name reads "set deadLetterPath". */
function keepHint(label: string): string {
  return label.startsWith('--') ? `pass ${label} FILE to keep them` : `set ${label} to keep them`;
}
