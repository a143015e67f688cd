import { ConfigError, InternalError } from '../../core/index.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { planRestore, planStartup, type CorruptCheckpoint, type RestoreStart } from '../../checkpoint/restore-plan.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { CheckpointStorage, TaskStateReader } from '../../storage/checkpoint-storage.ts';
import type { SavepointStorage } from '../../storage/savepoint-storage.ts';
import { defaultSavepointLocation, openSavepointStorageAt } from '../../storage/storage-locations.ts';
import { DEFAULT_SAVEPOINT_SUBDIR, type CheckpointingConfig } from '../checkpoint-driver/checkpointing-config.ts';
import { openExternalRestore, restoreSourceOf, type ExternalRestore } from './external-restore.ts';
import { RESTORE_MARKER_FILE, readRestoreMarker, removeRestoreMarker, writeRestoreMarker } from './restore-marker.ts';
import { checkCompatible } from './restore-plan.ts';
import { openCheckpointStorage } from './open-checkpoint-storage.ts';
import { highestRecordedEpoch, issueFencingToken } from '../fencing-epochs.ts';

/** `<dir>/savepoints`: beside the checkpoints, in the same folder or object store (`s3://bucket/prefix/savepoints`). */
export function defaultSavepointDir(checkpointDir: string): string {
  return defaultSavepointLocation(checkpointDir, DEFAULT_SAVEPOINT_SUBDIR);
}

export interface PreparedCheckpointing {
  readonly storage: CheckpointStorage;
  readonly savepoints: SavepointStorage;
  /** The checkpoint to start from, if any. */
  readonly latest: CheckpointMetadata | undefined;
  /** Set when `latest` is a savepoint or checkpoint directory outside `storage` (from `--restore`). */
  readonly external: ExternalRestore | undefined;
  /** Highest id present in storage: new checkpoints get higher ones. */
  readonly lastCheckpointId: number;
  /**
   * A restart within the run takes the latest checkpoint of `storage` only if its id is above this; else it starts
   * from `latest` again (checkpoints at or below it predate a `--restore`).
   */
  readonly restartFloor: number;
  /** `--allow-replay`: a restart may also pass over corrupt checkpoints (see planRestore). */
  readonly allowReplay: boolean;
}

/**
 * At start-up: raises the storage fence (an earlier run still running can no longer write or delete there),
 * removes what crashed checkpoints and savepoints left, finds where to start, and checks it belongs
 * to this job. That is the latest complete checkpoint (passing over corrupt ones only as planRestore allows), unless the folder's
 * job was restored from a savepoint (`--restore`) or stopped with one, as restore.json records, and has completed
 * no checkpoint since: then that savepoint. `--fresh` discards the folder's checkpoints (and restore.json) first.
 */
export async function prepareCheckpointing(
  config: CheckpointingConfig,
  plan: PhysicalPlan,
  log: (line: string) => void,
): Promise<PreparedCheckpointing> {
  const storage = await openCheckpointStorage(config.dir);
  const savepoints = await openSavepointStorageAt(config.savepointDir ?? defaultSavepointDir(config.dir));
  // Own the location before deleting anything in it: an earlier run still writing (a zombie) is fenced from here
  // on, so its in-flight checkpoint is what removeIncomplete deletes, and its later clean-up cannot delete ours.
  // The first attempt raises again above this (highestRecordedEpoch reads it back).
  await storage.fence(issueFencingToken(undefined, await highestRecordedEpoch(storage, undefined)));
  const removed = await storage.removeIncomplete();
  await savepoints.removeIncomplete();
  const listed = await storage.list();
  const fresh = config.fresh === true;
  // Not read with --fresh: it is how a user gets past a damaged restore.json.
  const found = fresh ? undefined : await readRestoreMarker(storage.records, storage.location);
  const corrupt: CorruptCheckpoint[] = [];
  const own = fresh ? undefined : await storage.latestComplete((checkpointId, reason) => corrupt.push({ checkpointId, reason }));
  const startup = planStartup({
    location: storage.location,
    fresh,
    ...(config.restore === undefined ? {} : { restore: config.restore, restoreSource: restoreSourceOf(config.restore) }),
    marker: found,
    checkpointIds: listed.map((c) => c.checkpointId),
    removedIds: removed,
    latestComplete: own?.checkpointId,
  });
  if (startup.discard.length > 0) {
    for (const id of startup.discard) await storage.discard(id);
    log(`--fresh: discarded ${startup.discard.length} checkpoint(s) in ${storage.location}`);
  }
  if (startup.removeMarker) await removeRestoreMarker(storage.records);
  const compatibility = { allowNonRestoredState: config.allowNonRestoredState === true, log };
  const allowReplay = config.allowReplay === true;
  let marker = found;
  let external: ExternalRestore | undefined;
  let latest: CheckpointMetadata | undefined;
  if (startup.from === 'checkpoint') {
    latest = own;
    const start: RestoreStart = latest === undefined ? { kind: 'beginning' } : { kind: 'checkpoint', checkpointId: latest.checkpointId };
    for (const line of planRestore({ location: storage.location, corrupt, start, allowReplay }).warnings) log(line);
    if (latest !== undefined) checkCompatible(latest, plan, storage.location, compatibility);
  } else {
    if (startup.from === 'restore' && config.restore !== undefined && startup.newMarkerFloor !== undefined) {
      // Checked before the marker is written, so a savepoint this job cannot use leaves the folder as it was.
      external = await openExternalRestore(config.restore, plan, compatibility);
      marker = { source: external.location, checkpointId: external.metadata.checkpointId, floor: startup.newMarkerFloor };
      await writeRestoreMarker(storage.records, marker);
    }
    if (marker === undefined) throw new InternalError(`start-up planned to continue from a restore marker, but ${storage.location} has none`);
    const source = marker.source;
    external ??= await openExternalRestore(source, plan, compatibility).catch((err: unknown) => {
      if (config.restore !== undefined || !(err instanceof ConfigError)) throw err;
      throw new ConfigError(
        `${err.message} (${RESTORE_MARKER_FILE} in ${storage.location} says the job continues from it; pass --restore with another savepoint, or --fresh to start from the beginning)`,
        { cause: err },
      );
    });
    latest = external.metadata;
    const start: RestoreStart = { kind: 'savepoint', description: external.description };
    for (const line of planRestore({ location: storage.location, corrupt, floor: marker.floor, start, allowReplay }).warnings) log(line);
  }
  for (const line of startup.notes) log(line);
  const lastCheckpointId = Math.max(startup.highestCheckpointId, latest?.checkpointId ?? 0);
  return { storage, savepoints, latest, external, lastCheckpointId, restartFloor: marker?.floor ?? 0, allowReplay };
}

/** What runAttempts needs to know where a restart resumes; the floor only counts when the run started outside `storage`. */
export function restartOrigin(
  prepared: PreparedCheckpointing,
): { storage: CheckpointStorage; first: CheckpointMetadata | undefined; restartFloor: number | undefined; allowReplay: boolean } {
  return {
    storage: prepared.storage,
    first: prepared.latest,
    restartFloor: prepared.external === undefined ? undefined : prepared.restartFloor,
    allowReplay: prepared.allowReplay,
  };
}

/** Ids of the complete checkpoints, not savepoints, that `storage` holds now: those retention counts. */
export async function retainedCheckpointIds(storage: CheckpointStorage): Promise<number[]> {
  return (await storage.list()).filter((c) => c.status === 'complete' && !c.metadata.savepoint).map((c) => c.checkpointId);
}

/** Where the task files of `metadata` are: the `--restore` directory it came from, or checkpoint storage. */
export function restoreReader(prepared: PreparedCheckpointing, metadata: CheckpointMetadata): TaskStateReader {
  return metadata === prepared.external?.metadata ? prepared.external.reader : prepared.storage;
}

/** The line a runner logs when it starts from `metadata`: `restored from checkpoint 12` / `… savepoint PATH`. */
export function restoredFromLine(prepared: PreparedCheckpointing, metadata: CheckpointMetadata): string {
  const external = metadata === prepared.external?.metadata ? prepared.external : undefined;
  return `restored from ${external?.description ?? `checkpoint ${metadata.checkpointId}`}`;
}
