import { join, resolve } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import { planRestore, type CorruptCheckpoint, type RestoreStart } from '../../checkpoint/restore-plan.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { CheckpointStorage, TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { FileSavepointStorage } from '../../storage/fs/file-savepoint-storage.ts';
import { DEFAULT_SAVEPOINT_SUBDIR, type CheckpointingConfig } from '../checkpoint-driver/checkpointing-config.ts';
import { openExternalRestore, type ExternalRestore } from './external-restore.ts';
import { RESTORE_MARKER_FILE, readRestoreMarker, removeRestoreMarker, writeRestoreMarker, type RestoreMarker } from './restore-marker.ts';
import { checkCompatible } from './restore-plan.ts';
import { isRemoteLocation, openCheckpointStorage } from './open-checkpoint-storage.ts';

/** `<dir>/savepoints` for a local checkpoint folder; savepoints of a job checkpointing to S3 go to ./savepoints. */
export function defaultSavepointDir(checkpointDir: string): string {
  return isRemoteLocation(checkpointDir) ? DEFAULT_SAVEPOINT_SUBDIR : join(checkpointDir, DEFAULT_SAVEPOINT_SUBDIR);
}

export interface PreparedCheckpointing {
  readonly storage: CheckpointStorage;
  readonly savepoints: FileSavepointStorage;
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
 * At start-up: removes what crashed checkpoints and savepoints left, finds where to start, and checks it belongs
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
  const savepoints = new FileSavepointStorage(config.savepointDir ?? defaultSavepointDir(config.dir));
  const removed = await storage.removeIncomplete();
  await savepoints.removeIncomplete();
  let listed = await storage.list();
  let lastCheckpointId = Math.max(0, ...removed, ...listed.map((c) => c.checkpointId));
  let marker: RestoreMarker | undefined;
  if (config.fresh === true) {
    if (listed.length > 0) {
      for (const c of listed) await storage.discard(c.checkpointId);
      log(`--fresh: discarded ${listed.length} checkpoint(s) in ${storage.location}`);
    }
    // Not read first: --fresh is how a user gets past a damaged restore.json.
    await removeRestoreMarker(storage.records);
    listed = [];
  } else {
    marker = await readRestoreMarker(storage.records, storage.location);
  }
  let external: ExternalRestore | undefined;
  const compatibility = { allowNonRestoredState: config.allowNonRestoredState === true, log };
  if (config.restore !== undefined && resolve(config.restore) !== marker?.source) {
    // Checked before the marker is written, so a savepoint this job cannot use leaves the folder as it was.
    external = await openExternalRestore(config.restore, plan, compatibility);
    marker = { source: external.dir, checkpointId: external.metadata.checkpointId, floor: lastCheckpointId };
    await writeRestoreMarker(storage.records, marker);
  }
  const corrupt: CorruptCheckpoint[] = [];
  const own = config.fresh === true ? undefined : await storage.latestComplete((checkpointId, reason) => corrupt.push({ checkpointId, reason }));
  let latest: CheckpointMetadata | undefined;
  if (marker === undefined || (own !== undefined && own.checkpointId > marker.floor)) {
    latest = own;
    external = undefined;
    const start: RestoreStart = latest === undefined ? { kind: 'beginning' } : { kind: 'checkpoint', checkpointId: latest.checkpointId };
    for (const line of planRestore({ location: storage.location, corrupt, start, allowReplay: config.allowReplay === true }).warnings) log(line);
    if (latest !== undefined) checkCompatible(latest, plan, storage.location, compatibility);
    if (latest !== undefined && config.restore !== undefined) {
      log(`--restore ${config.restore}: the job in ${storage.location} was restored from it before; resuming from its latest checkpoint`);
    }
  } else {
    external ??= await openExternalRestore(marker.source, plan, compatibility).catch((err: unknown) => {
      if (config.restore !== undefined || !(err instanceof ConfigError)) throw err;
      throw new ConfigError(
        `${err.message} (${RESTORE_MARKER_FILE} in ${storage.location} says the job continues from it; pass --restore with another savepoint, or --fresh to start from the beginning)`,
        { cause: err },
      );
    });
    latest = external.metadata;
    const start: RestoreStart = { kind: 'savepoint', description: external.description };
    const decision = planRestore({ location: storage.location, corrupt, floor: marker.floor, start, allowReplay: config.allowReplay === true });
    for (const line of decision.warnings) log(line);
    if (config.restore === undefined) log(resumingRestoreNote(marker, storage.location));
  }
  lastCheckpointId = Math.max(lastCheckpointId, latest?.checkpointId ?? 0);
  return { storage, savepoints, latest, external, lastCheckpointId, restartFloor: marker?.floor ?? 0, allowReplay: config.allowReplay === true };
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

function resumingRestoreNote(marker: RestoreMarker, location: string): string {
  return `the job in ${location} started from or was stopped with ${marker.source}, and has completed no checkpoint since: continuing from it`;
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
