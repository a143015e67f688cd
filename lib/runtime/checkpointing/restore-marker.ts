import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import { CheckpointIoError } from '../../storage/errors.ts';
import { fsyncDirectory, writeFileDurably } from '../../storage/fs/durable-fs.ts';

/**
 * `restore.json` in a checkpoint folder: the savepoint (or checkpoint directory) the folder's job continues from,
 * because it was restored from it with `--restore` or stopped with it, and the highest checkpoint id the folder had
 * used by then. Checkpoints with a higher id were taken after; older ones are never resumed from (after a stop, the
 * sinks have committed more than they cover). So a run interrupted before its first checkpoint starts from the
 * savepoint again, and one interrupted later resumes from its own latest checkpoint, with `--restore` or without.
 */
export interface RestoreMarker {
  /** Absolute path of the savepoint or checkpoint directory. */
  readonly source: string;
  readonly checkpointId: number;
  /** Checkpoints of the folder with an id above this were taken after the restore. */
  readonly floor: number;
}

export const RESTORE_MARKER_FILE = 'restore.json';

export async function readRestoreMarker(checkpointDir: string): Promise<RestoreMarker | undefined> {
  const file = join(resolve(checkpointDir), RESTORE_MARKER_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CheckpointIoError('read', file, cause);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const m = value as Partial<RestoreMarker> | undefined;
  if (
    typeof m !== 'object' ||
    m === null ||
    typeof m.source !== 'string' ||
    !Number.isSafeInteger(m.checkpointId) ||
    !Number.isSafeInteger(m.floor)
  ) {
    throw new ConfigError(
      `${file} is not a valid restore record ({"source", "checkpointId", "floor"}); delete it, or start with --fresh to discard this folder's checkpoints`,
    );
  }
  return { source: m.source, checkpointId: m.checkpointId as number, floor: m.floor as number };
}

/** Replaces the marker atomically (temp file, fsync, rename). */
export async function writeRestoreMarker(checkpointDir: string, marker: RestoreMarker): Promise<void> {
  const dir = resolve(checkpointDir);
  const file = join(dir, RESTORE_MARKER_FILE);
  const temp = `${file}.${randomBytes(4).toString('hex')}.inprogress`;
  try {
    await mkdir(dir, { recursive: true });
    await writeFileDurably(temp, Buffer.from(`${JSON.stringify(marker, null, 2)}\n`, 'utf8'));
    await rename(temp, file);
    await fsyncDirectory(dir);
  } catch (cause) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw new CheckpointIoError('write', file, cause);
  }
}

export async function removeRestoreMarker(checkpointDir: string): Promise<void> {
  const file = join(resolve(checkpointDir), RESTORE_MARKER_FILE);
  try {
    await rm(file, { force: true });
  } catch (cause) {
    throw new CheckpointIoError('remove', file, cause);
  }
}
