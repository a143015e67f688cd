import { closeSync, fsyncSync, openSync, renameSync, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { basename, dirname } from 'node:path';
import { InternalError, SluiceError } from '../../core/index.ts';
import type { PartFileCommittable } from './part-file.ts';
import { crashPoint } from '../../core/fault-injection.ts';

/**
 * Why a part file cannot be committed: 'lost' (neither its pending nor its final file exists), 'conflict' (a
 * different file already has its final name) or 'corrupt' (its pending file no longer has the pre-committed size).
 * Retrying cannot help: the checkpoint that owns the committable refers to data that is not there any more.
 */
export class PartFileCommitError extends SluiceError {
  constructor(
    readonly reason: 'lost' | 'conflict' | 'corrupt',
    readonly committable: PartFileCommittable,
    message: string,
  ) {
    super('PART_FILE_COMMIT', message, { retriable: false });
  }
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Committables come back from checkpoint files: refuse anything that is not one, rather than rename at random. */
export function assertPartFileCommittable(value: unknown): asserts value is PartFileCommittable {
  const c = value as Partial<PartFileCommittable> | null;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.pendingPath !== 'string' ||
    typeof c.finalPath !== 'string' ||
    !Number.isSafeInteger(c.size) ||
    (c.size as number) < 0 ||
    !/^\..+\.pending$/.test(basename(c.pendingPath)) ||
    !/^[^.].*\.jsonl$/.test(basename(c.finalPath))
  ) {
    throw new InternalError(`JSONL file sink: not a part file committable: ${JSON.stringify(value)}`);
  }
}

/**
 * Renames a pending file to its final name; returns false when that already happened. Idempotent, as a commit
 * replayed after a restore must be, and never overwrites a final file.
 */
export function commitPartFile(c: PartFileCommittable): boolean {
  const pending = statOrUndefined(c.pendingPath);
  if (pending === undefined) return alreadyCommitted(c);
  if (statOrUndefined(c.finalPath) !== undefined) {
    throw new PartFileCommitError(
      'conflict',
      c,
      `cannot commit ${c.pendingPath}: ${c.finalPath} already exists and is another file; refusing to overwrite it. ` +
        'Is another job writing part files with the same prefix into this directory?',
    );
  }
  if (pending.size !== c.size) {
    throw new PartFileCommitError(
      'corrupt',
      c,
      `cannot commit ${c.pendingPath}: it holds ${pending.size} bytes but ${c.size} were pre-committed; ` +
        'it was changed after its checkpoint, so its data is lost.',
    );
  }
  try {
    renameSync(c.pendingPath, c.finalPath);
  } catch (err) {
    // Another committer of the same committable may have won the race; then the final file is there.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return alreadyCommitted(c);
    throw err;
  }
  return true;
}

function alreadyCommitted(c: PartFileCommittable): false {
  const final = statOrUndefined(c.finalPath);
  if (final === undefined) {
    throw new PartFileCommitError(
      'lost',
      c,
      `cannot commit ${c.finalPath}: its data is lost. Neither the pending file ${c.pendingPath} nor the final ` +
        'file exists: they were deleted or moved after the checkpoint that owns them completed (by hand, or by ' +
        'another job cleaning up the same directory). Its records are not replayed, as the checkpoint counts them ' +
        'as written; restore from an older checkpoint or start fresh to produce them again.',
    );
  }
  if (final.size !== c.size) {
    throw new PartFileCommitError(
      'conflict',
      c,
      `cannot commit ${c.pendingPath}: it is gone and ${c.finalPath} holds ${final.size} bytes, not the ` +
        `${c.size} pre-committed, so the final file is another file or was changed; the committed data is lost.`,
    );
  }
  return false;
}

/** Makes renames and new entries in a directory durable. Some platforms cannot sync a directory; that is skipped. */
export function fsyncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EISDIR' || (err as NodeJS.ErrnoException).code === 'EPERM') return;
    throw err;
  }
  try {
    fsyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EPERM' && code !== 'EISDIR' && code !== 'EBADF') throw err;
  } finally {
    closeSync(fd);
  }
}

/** Commits every committable, then syncs their directories once each, replayed commits included. */
export function commitPartFiles(committables: readonly PartFileCommittable[]): void {
  const dirs = new Set<string>();
  for (let i = 0; i < committables.length; i++) {
    const c = committables[i];
    assertPartFileCommittable(c);
    if (commitPartFile(c) && i < committables.length - 1) crashPoint('during-commit');
    dirs.add(dirname(c.finalPath));
  }
  for (const dir of dirs) fsyncDirectory(dir);
}
