import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** A rejected input line, written as one JSON line. */
export interface DeadLetter {
  /** Input file path. */
  readonly file: string;
  /** 1-based line number in the file. */
  readonly line: number;
  /** Byte offset of the line start in the file. */
  readonly offset: number;
  readonly error: string;
  /** The line as read, without its line terminator. */
  readonly raw: string;
}

/**
 * Appends dead letters to a JSONL file that several subtasks (threads) may share: the file is opened with
 * O_APPEND and each letter is a single write, so lines from different writers never interleave.
 */
export class DeadLetterFile {
  private fd: number | undefined;

  constructor(readonly path: string) {}

  append(letter: DeadLetter): void {
    if (this.fd === undefined) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.fd = openSync(this.path, 'a');
    }
    const line = JSON.stringify({
      file: letter.file,
      line: letter.line,
      offset: letter.offset,
      error: letter.error,
      raw: letter.raw,
    });
    writeSync(this.fd, line + '\n');
  }

  close(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }
}
