import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import { checkOutputFile, realPathOf } from './output-file-checks.ts';
import { readOwnerRecord, writeOwnerRecord } from './output-owner.ts';

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

export interface DeadLetterFileOptions {
  /** How the user named the file, for messages (a flag such as `--dead-letter`). @default 'deadLetterPath' */
  readonly label?: string;
  /** The job's input (file or directory): the dead-letter file may not be it, nor lie inside it. */
  readonly input: string;
}

interface DeadLetterOwner {
  readonly kind: 'dead-letters';
  /** Real paths of the inputs whose lines the file holds. */
  readonly inputs: readonly string[];
}

/** Identifies a letter: a line of an input file is rejected at most once, whatever reads it again. */
const letterKey = (file: string, offset: number): string => `${offset}\u0000${file}`;

/**
 * Appends dead letters to a JSONL file that several subtasks (threads) may share: the file is opened with
 * O_APPEND and each letter is a single write, so lines from different writers never interleave.
 *
 * Exactly once across crashes: a letter is identified by its input file and byte offset, and one already in the
 * file is not written again. A job restored from a checkpoint reads the lines after the checkpoint again, and the
 * letters it had written for them before the crash are skipped; those before the checkpoint were written (and, at
 * the checkpoint, synced by `sync`) before it completed. The file may therefore be appended to only by the
 * dead-letter writer of the same input: an existing file is refused unless its owner record (a hidden
 * `.<name>.sluice.json` beside it) names the same input.
 */
export class DeadLetterFile {
  private fd: number | undefined;
  private readonly written = new Set<string>();
  private readonly owner: DeadLetterOwner;
  private readonly label: string;

  constructor(
    readonly path: string,
    options: DeadLetterFileOptions,
  ) {
    this.label = options.label ?? 'deadLetterPath';
    this.owner = { kind: 'dead-letters', inputs: [realPathOf(options.input)] };
    checkDeadLetterTarget(path, this.label, options.input);
    if (existsSync(path)) this.loadWritten();
  }

  append(letter: DeadLetter): void {
    const key = letterKey(letter.file, letter.offset);
    if (this.written.has(key)) return;
    if (this.fd === undefined) this.open();
    const line = JSON.stringify({
      file: letter.file,
      line: letter.line,
      offset: letter.offset,
      error: letter.error,
      raw: letter.raw,
    });
    writeSync(this.fd as number, line + '\n');
    this.written.add(key);
  }

  /** Makes the letters written so far durable; called at each checkpoint, before it can complete. */
  sync(): void {
    if (this.fd !== undefined) fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  private open(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    // The record goes first: another subtask that finds the file then finds it owned.
    if (readOwnerRecord<DeadLetterOwner>(this.path) === undefined) writeOwnerRecord(this.path, this.owner);
    this.fd = openSync(this.path, 'a', 0o600);
  }

  private loadWritten(): void {
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (line.length === 0) continue;
      try {
        const letter = JSON.parse(line) as Partial<DeadLetter>;
        if (typeof letter.file === 'string' && typeof letter.offset === 'number') this.written.add(letterKey(letter.file, letter.offset));
      } catch {
        // A line that is not a letter identifies none; it stays as it is.
      }
    }
  }
}

/**
 * Refuses a dead-letter path that is a directory, the input or inside it, or an existing file that is not the
 * dead-letter file of this same input (a user's file, or another job's): appending to it would mix or destroy data.
 */
export function checkDeadLetterTarget(path: string, label: string, input: string): void {
  checkOutputFile({ path, label, inputs: [input] });
  if (!existsSync(path)) return;
  const owner = readOwnerRecord<Partial<DeadLetterOwner>>(path);
  const inputs = [realPathOf(input)];
  if (owner?.kind === 'dead-letters' && JSON.stringify(owner.inputs) === JSON.stringify(inputs)) return;
  const whose = owner === undefined ? 'it was not written by a Sluice dead-letter writer' : `it holds the dead letters of ${JSON.stringify(owner.inputs)}`;
  throw new ConfigError(
    `${label} ${path} already exists and ${whose}; refusing to append to it. Remove or move it, or give another path ` +
      '(a rerun of the same job on the same input may reuse its own dead-letter file).',
  );
}
