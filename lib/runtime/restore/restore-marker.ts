import { ConfigError } from '../../core/index.ts';
import type { JobRecordStore } from '../../storage/checkpoint-storage.ts';

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

/** Reads the folder's marker; `location` names the checkpoint folder in messages. */
export async function readRestoreMarker(records: JobRecordStore, location: string): Promise<RestoreMarker | undefined> {
  const text = await records.read(RESTORE_MARKER_FILE);
  if (text === undefined) return undefined;
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
      `${RESTORE_MARKER_FILE} in ${location} is not a valid restore record ({"source", "checkpointId", "floor"}); delete it, or start with --fresh to discard this folder's checkpoints`,
    );
  }
  return { source: m.source, checkpointId: m.checkpointId as number, floor: m.floor as number };
}

/** Replaces the marker atomically. */
export async function writeRestoreMarker(records: JobRecordStore, marker: RestoreMarker): Promise<void> {
  await records.write(RESTORE_MARKER_FILE, `${JSON.stringify(marker, null, 2)}\n`);
}

export async function removeRestoreMarker(records: JobRecordStore): Promise<void> {
  await records.remove(RESTORE_MARKER_FILE);
}
