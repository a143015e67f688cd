import { ConfigError } from '../core/index.ts';

/**
 * `restore.json` in a checkpoint folder: the savepoint (or checkpoint directory) the folder's job continues from,
 * because it was restored from it with `--restore` or stopped with it, and the highest checkpoint id the folder had
 * used by then. Checkpoints with a higher id were taken after; older ones are never resumed from (after a stop, the
 * sinks have committed more than they cover). So a run interrupted before its first checkpoint starts from the
 * savepoint again, and one interrupted later resumes from its own latest checkpoint, with `--restore` or without.
 */
export interface RestoreMarker {
  /** Absolute path (or URI) of the savepoint or checkpoint directory. */
  readonly source: string;
  readonly checkpointId: number;
  /** Checkpoints of the folder with an id above this were taken after the restore. */
  readonly floor: number;
}

/** What a checkpoint folder holds at start-up, and what the user asked for. */
export interface StartupInput {
  /** The checkpoint folder, for messages. */
  readonly location: string;
  /** `--fresh`: discard the folder's checkpoints and its restore marker, and start from the beginning (or `restore`). */
  readonly fresh: boolean;
  /** `--restore` as the user gave it (for messages). @default none */
  readonly restore?: string;
  /** `--restore` as an absolute path, or a URI (`s3://…`) as given, compared with the marker's source. Required with `restore`. */
  readonly restoreSource?: string;
  /** The folder's restore marker as read (not read with `fresh`). */
  readonly marker: RestoreMarker | undefined;
  /** Ids of every checkpoint the folder holds, complete or not. */
  readonly checkpointIds: readonly number[];
  /** Ids of the incomplete checkpoints removed at start-up: no new checkpoint may reuse them. @default none */
  readonly removedIds?: readonly number[];
  /** Id of the folder's latest complete checkpoint that is not corrupt (not read with `fresh`). */
  readonly latestComplete: number | undefined;
}

/** Where a run starts, and what to change in the folder first. */
export interface StartupPlan {
  /** `--fresh`: checkpoints to discard (ascending) and the restore marker to remove, before anything else. */
  readonly discard: readonly number[];
  readonly removeMarker: boolean;
  /**
   * `checkpoint`: the folder's latest complete checkpoint (`latestComplete`), or the beginning without one.
   * `restore`: a `--restore` the folder has not recorded: open and check it, then record it with `newMarkerFloor`.
   * `marker`: the savepoint the folder's marker names (nothing newer was completed since).
   */
  readonly from: 'checkpoint' | 'restore' | 'marker';
  /** With `from: 'restore'`: the floor of the marker to write (the highest id the folder has used). */
  readonly newMarkerFloor: number | undefined;
  /** The floor that applies: checkpoints of the folder at or below it predate the savepoint restored. */
  readonly floor: number | undefined;
  /** The highest id used so far; new checkpoints get higher ones. */
  readonly highestCheckpointId: number;
  /** Lines to log. */
  readonly notes: readonly string[];
}

/**
 * Decides where a run starts: the latest complete checkpoint of the folder, unless the folder's job was restored
 * from a savepoint (`--restore`) or stopped with one, as its restore marker records, and has completed no
 * checkpoint since: then that savepoint. A `--restore` the marker does not name yet starts from it and is recorded
 * with the folder's highest id as floor. `--fresh` discards the folder's checkpoints and marker first. Whether
 * corrupt checkpoints may be passed over is `planRestore`'s decision, with `floor`.
 */
export function planStartup(input: StartupInput): StartupPlan {
  const highestCheckpointId = Math.max(0, ...input.checkpointIds, ...(input.removedIds ?? []));
  const discard = input.fresh ? [...new Set(input.checkpointIds)].sort((a, b) => a - b) : [];
  const marker = input.fresh ? undefined : input.marker;
  const latest = input.fresh ? undefined : input.latestComplete;
  const base = { discard, removeMarker: input.fresh, highestCheckpointId };
  const newRestore = input.restore !== undefined && (input.restoreSource ?? input.restore) !== marker?.source;
  const floor = newRestore ? highestCheckpointId : marker?.floor;
  if (floor === undefined || (latest !== undefined && latest > floor)) {
    const notes =
      latest !== undefined && input.restore !== undefined
        ? [`--restore ${input.restore}: the job in ${input.location} was restored from it before; resuming from its latest checkpoint`]
        : [];
    return { ...base, from: 'checkpoint', newMarkerFloor: undefined, floor, notes };
  }
  if (newRestore || marker === undefined) return { ...base, from: 'restore', newMarkerFloor: floor, floor, notes: [] };
  const notes =
    input.restore === undefined
      ? [`the job in ${input.location} started from or was stopped with ${marker.source}, and has completed no checkpoint since: continuing from it`]
      : [];
  return { ...base, from: 'marker', newMarkerFloor: undefined, floor, notes };
}

/**
 * Where a restart within a run resumes: the latest complete checkpoint of the folder, unless the run started from a
 * savepoint outside it (`floor` set) and no checkpoint above the floor completed since: then that savepoint again.
 */
export function planRestart(input: { readonly floor: number | undefined; readonly latestComplete: number | undefined }): 'latest' | 'first' {
  if (input.floor === undefined) return 'latest';
  return input.latestComplete !== undefined && input.latestComplete > input.floor ? 'latest' : 'first';
}

/** The marker a stop-with-savepoint leaves: the folder's job continues from the savepoint, not an older checkpoint. */
export function markerAfterStop(savepoint: { readonly path: string; readonly checkpointId: number }): RestoreMarker {
  return { source: savepoint.path, checkpointId: savepoint.checkpointId, floor: savepoint.checkpointId };
}

/** A committed checkpoint that cannot be restored, and why. */
export interface CorruptCheckpoint {
  readonly checkpointId: number;
  readonly reason: string;
}

/** Where a restore would start once the corrupt checkpoints are passed over. */
export type RestoreStart =
  /** An older complete checkpoint of the same folder. */
  | { readonly kind: 'checkpoint'; readonly checkpointId: number }
  /** The savepoint (or outside checkpoint) the folder's job was restored from, as restore.json records. */
  | { readonly kind: 'savepoint'; readonly description: string }
  /** No state at all: the sources read from their beginning. */
  | { readonly kind: 'beginning' };

export interface RestorePlanInput {
  /** The checkpoint folder, for messages. */
  readonly location: string;
  /** Committed checkpoints found corrupt, newer than `start` (any order). */
  readonly corrupt: readonly CorruptCheckpoint[];
  /**
   * Checkpoints at or below this id predate a restore from a savepoint (restore.json's floor): their output is not
   * this job's, so passing over them replays nothing. @default 0
   */
  readonly floor?: number;
  readonly start: RestoreStart;
  /** `--allow-replay`: the user accepts falling back to an older checkpoint or savepoint. */
  readonly allowReplay: boolean;
}

/** What the restore does, when it may go ahead. */
export interface RestorePlan {
  /** Lines to log (a fallback accepted with `--allow-replay`). */
  readonly warnings: string[];
}

/**
 * Decides whether a job may start from `start` although newer committed checkpoints are corrupt. A committed
 * checkpoint's sinks committed its output when it completed, so starting from anything older writes that output
 * again: refused (ConfigError, exit 2) unless the user passes `--allow-replay`. Starting from the beginning while
 * checkpoints exist is refused even then: only `--fresh` (which discards them) does that.
 */
export function planRestore(input: RestorePlanInput): RestorePlan {
  const floor = input.floor ?? 0;
  const corrupt = input.corrupt.filter((c) => c.checkpointId > floor).sort((a, b) => a.checkpointId - b.checkpointId);
  if (corrupt.length === 0) return { warnings: [] };
  const ids = corrupt.map((c) => c.checkpointId);
  const which = `${corrupt.length === 1 ? 'checkpoint' : 'checkpoints'} ${idRange(ids)}`;
  const reasons = corrupt.map((c) => `  checkpoint ${c.checkpointId}: ${c.reason}`).join('\n');
  const found = `${which} in ${input.location} ${corrupt.length === 1 ? 'is' : 'are'} corrupt:\n${reasons}\n`;
  if (input.start.kind === 'beginning') {
    throw new ConfigError(
      `${found}no complete checkpoint is left to restore from: starting anyway would start from the beginning and ` +
        `write again all output committed by ${which}. Start over on purpose with --fresh (discards the folder's ` +
        'checkpoints), or restore a savepoint with --restore',
    );
  }
  const fallback =
    input.start.kind === 'checkpoint' ? `checkpoint ${input.start.checkpointId}` : `${input.start.description} (restore.json)`;
  const replay = `falling back to ${fallback} would replay the output committed by ${which}`;
  if (!input.allowReplay) {
    throw new ConfigError(
      `${found}${replay}, so the sinks would receive it twice. Pass --allow-replay to fall back anyway, ` +
        'or --fresh to start over from the beginning',
    );
  }
  return { warnings: [`warning: --allow-replay: ${which} corrupt; ${replay} (duplicates in the output)`] };
}

/** `12`, `12..14` for consecutive ids, else `12, 14`. */
function idRange(ids: readonly number[]): string {
  const first = ids[0]!;
  const last = ids[ids.length - 1]!;
  if (ids.length > 2 && last - first === ids.length - 1) return `${first}..${last}`;
  return ids.join(', ');
}
