import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { hiddenPartFileParser } from './part-file-names.ts';
import type { HiddenPartFile } from './part-file-names.ts';

/**
 * Deletes the hidden part files in `dir` that other attempts than `attempt` left and that `which` selects, any
 * subtask's. Files of `attempt` are never touched, so every subtask of a run may do this at the same time; a file
 * another caller deleted first is skipped. Returns the deleted names.
 */
export async function deleteLeftoverPartFiles(
  dir: string,
  prefix: string,
  attempt: string,
  which: (file: HiddenPartFile) => boolean,
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const parse = hiddenPartFileParser(prefix);
  const deleted: string[] = [];
  for (const name of names) {
    const file = parse(name);
    if (file === undefined || file.attempt === attempt || !which(file)) continue;
    try {
      await unlink(join(dir, name));
      deleted.push(name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return deleted;
}

/**
 * At start: in-progress files of earlier attempts were never pre-committed, so no checkpoint refers to them and
 * their records will be replayed. Pending files stay: one may be in another subtask's share of the restored
 * checkpoint, which this subtask does not know; `sweepPendingLeftovers` removes them once that is settled.
 */
export function cleanUpInProgressLeftovers(dir: string, prefix: string, attempt: string): Promise<string[]> {
  return deleteLeftoverPartFiles(dir, prefix, attempt, (file) => file.kind === 'inprogress');
}

/**
 * Once a checkpoint of `attempt` is complete, every subtask has committed the restored committables (before it
 * acknowledged that checkpoint), so every hidden file of another attempt is garbage: a transaction that no
 * complete checkpoint holds, whose records are replayed.
 */
export function sweepPendingLeftovers(dir: string, prefix: string, attempt: string): Promise<string[]> {
  return deleteLeftoverPartFiles(dir, prefix, attempt, () => true);
}
