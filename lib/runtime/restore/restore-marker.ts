import { ConfigError } from '../../core/index.ts';
import type { JobRecordStore } from '../../storage/checkpoint-storage.ts';

import type { RestoreMarker } from '../../checkpoint/restore-plan.ts';

/** `restore.json`: see RestoreMarker (lib/checkpoint/restore-plan.ts) for what it means and how it is used. */
export type { RestoreMarker } from '../../checkpoint/restore-plan.ts';

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
