import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import type { SourceSplit } from '../source.ts';

/**
 * A byte range of one JSONL file. The split owns every line whose first byte lies in [start, end): a split that
 * starts mid-line skips to the next line start, and the line that crosses `end` is read to its newline (the
 * Hadoop TextInputFormat rule), so each line is read exactly once whatever the split count.
 * Plain data (survives structured cloning and JSON), as the Source contract requires.
 */
export interface JsonlFileSplit extends SourceSplit {
  readonly path: string;
  /** Where reading resumes: the split's first byte, or (from `currentSplits`) the start of the next unread line. */
  readonly start: number;
  /** Exclusive end of the range; null in follow mode (read to the end of the file, then keep following it). */
  readonly end: number | null;
  /** 1-based number of the line that starts at `start`, when known (saves a count for dead-letter line numbers). */
  readonly line?: number;
}

export interface InputFile {
  readonly path: string;
  readonly size: number;
}

/**
 * Lists the input: the file itself, or the `*.jsonl` files of a directory sorted by name. Hidden names (leading
 * '.', such as a file sink's in-progress files) are skipped.
 */
export async function listInputFiles(path: string): Promise<InputFile[]> {
  let info;
  try {
    info = await stat(path);
  } catch (err) {
    throw new ConfigError(`JSONL source: input path "${path}" does not exist or cannot be read`, { cause: err });
  }
  if (info.isFile()) return [{ path, size: info.size }];
  if (!info.isDirectory()) throw new ConfigError(`JSONL source: input path "${path}" is neither a file nor a directory`);
  const names = (await readdir(path)).filter((n) => n.endsWith('.jsonl') && !n.startsWith('.')).sort();
  const files: InputFile[] = [];
  for (const name of names) {
    const file = join(path, name);
    const s = await stat(file);
    if (s.isFile()) files.push({ path: file, size: s.size });
  }
  if (files.length === 0) throw new ConfigError(`JSONL source: directory "${path}" contains no .jsonl files`);
  return files;
}

/**
 * Splits bounded files into byte ranges: max(parallelism, ceil(totalSize / splitSizeBytes)) ranges overall, shared
 * among the files in proportion to their size (at least one per file, never more ranges than bytes).
 */
export function planRangeSplits(files: readonly InputFile[], parallelism: number, splitSizeBytes: number): JsonlFileSplit[] {
  const total = files.reduce((sum, f) => sum + f.size, 0);
  const wanted = Math.max(parallelism, Math.ceil(total / splitSizeBytes));
  const splits: JsonlFileSplit[] = [];
  for (const file of files) {
    const proportional = total === 0 ? 1 : Math.ceil((wanted * file.size) / total);
    const count = Math.max(1, Math.min(proportional, file.size));
    for (let i = 0; i < count; i++) {
      const start = Math.floor((i * file.size) / count);
      const end = Math.floor(((i + 1) * file.size) / count);
      splits.push({ id: `${file.path}#${i}`, path: file.path, start, end });
    }
  }
  return splits;
}

/** Follow mode reads each file as one growing split. */
export function planFollowSplits(files: readonly InputFile[]): JsonlFileSplit[] {
  return files.map((f) => ({ id: f.path, path: f.path, start: 0, end: null, line: 1 }));
}
