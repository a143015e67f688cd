import { InternalError } from '../core/index.ts';
import type { TaskId } from './types.ts';

/**
 * The only place that spells checkpoint paths. Storage, restore and tooling build and read names through these
 * functions, so a listing never mistakes a stray file for a checkpoint. Paths are storage-relative and use '/'
 * whatever the platform; a filesystem or S3 implementation joins them onto its own root.
 *
 *   chk-0000000012/_metadata                        complete checkpoint 12
 *   chk-0000000012/task-3-1.state                   state of vertex 3, subtask 1 (unfenced, and before fencing)
 *   chk-0000000012/task-3-1-e42.state               the same, written by the attempt of fencing epoch 42
 *   savepoint-0000000013-1700000000000/_metadata     savepoint taken as checkpoint 13 at that epoch ms
 */

/** Written last and atomically: a directory without it is an incomplete checkpoint. */
export const METADATA_FILE_NAME = '_metadata';
/** Where the metadata is written before the rename that makes the checkpoint complete. */
export const METADATA_TEMP_FILE_NAME = '_metadata.inprogress';

const ID_DIGITS = 10;
/** Ids are zero-padded so a lexicographic listing is in id order. */
export const MAX_CHECKPOINT_ID = 10 ** ID_DIGITS - 1;

const CHECKPOINT_DIR = /^chk-(\d{10})$/;
const SAVEPOINT_DIR = /^savepoint-(\d{10})-(0|[1-9]\d{0,15})$/;
const TASK_STATE_FILE = /^task-(0|[1-9]\d{0,8})-(0|[1-9]\d{0,8})(?:-e(0|[1-9]\d{0,15}))?\.state$/;

/** A directory holding one checkpoint or savepoint. */
export type CheckpointDirectory =
  | { readonly kind: 'checkpoint'; readonly checkpointId: number }
  | { readonly kind: 'savepoint'; readonly checkpointId: number; readonly timestamp: number };

function checkId(checkpointId: number): string {
  if (!Number.isSafeInteger(checkpointId) || checkpointId < 1 || checkpointId > MAX_CHECKPOINT_ID) {
    throw new InternalError(`checkpoint id must be an integer between 1 and ${MAX_CHECKPOINT_ID}, got ${String(checkpointId)}`);
  }
  return String(checkpointId).padStart(ID_DIGITS, '0');
}

function checkIndex(what: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0 || value > 999_999_999) {
    throw new InternalError(`${what} must be an integer between 0 and 999999999, got ${String(value)}`);
  }
  return String(value);
}

/** `chk-0000000012` */
export function checkpointDirName(checkpointId: number): string {
  return `chk-${checkId(checkpointId)}`;
}

/** `savepoint-0000000013-1700000000000`: the timestamp keeps two savepoints apart across runs that reused an id. */
export function savepointDirName(checkpointId: number, timestamp: number): string {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new InternalError(`savepoint timestamp must be a non-negative integer (epoch ms), got ${String(timestamp)}`);
  }
  return `savepoint-${checkId(checkpointId)}-${timestamp}`;
}

export function directoryName(dir: CheckpointDirectory): string {
  return dir.kind === 'checkpoint' ? checkpointDirName(dir.checkpointId) : savepointDirName(dir.checkpointId, dir.timestamp);
}

/** The checkpoint id of a `chk-…` directory name; undefined for anything else. */
export function parseCheckpointDirName(name: string): number | undefined {
  const m = CHECKPOINT_DIR.exec(name);
  if (m === null) return undefined;
  const id = Number(m[1]);
  return id >= 1 ? id : undefined;
}

export function parseSavepointDirName(name: string): { checkpointId: number; timestamp: number } | undefined {
  const m = SAVEPOINT_DIR.exec(name);
  if (m === null) return undefined;
  const checkpointId = Number(m[1]);
  const timestamp = Number(m[2]);
  if (checkpointId < 1 || !Number.isSafeInteger(timestamp)) return undefined;
  return { checkpointId, timestamp };
}

/** Either kind of directory name; undefined for anything else. */
export function parseDirectoryName(name: string): CheckpointDirectory | undefined {
  const checkpointId = parseCheckpointDirName(name);
  if (checkpointId !== undefined) return { kind: 'checkpoint', checkpointId };
  const savepoint = parseSavepointDirName(name);
  return savepoint === undefined ? undefined : { kind: 'savepoint', ...savepoint };
}

/**
 * `task-3-1.state` for vertex 3, subtask 1; `task-3-1-e42.state` when written by fencing epoch 42. The epoch keeps
 * two attempts that reach the same checkpoint id (a zombie and the run that fenced it) from overwriting each other's
 * file; which one counts is what the committed metadata names.
 */
export function taskStateFileName(task: TaskId, epoch?: number): string {
  const base = `task-${checkIndex('vertex', task.vertex)}-${checkIndex('subtask', task.subtask)}`;
  if (epoch === undefined) return `${base}.state`;
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new InternalError(`fencing epoch must be a non-negative integer, got ${String(epoch)}`);
  return `${base}-e${epoch}.state`;
}

/** The task of a task state file name, with or without an epoch. */
export function parseTaskStateFileName(name: string): TaskId | undefined {
  const m = TASK_STATE_FILE.exec(name);
  if (m === null) return undefined;
  if (m[3] !== undefined && !Number.isSafeInteger(Number(m[3]))) return undefined;
  return { vertex: Number(m[1]), subtask: Number(m[2]) };
}

/** `chk-0000000012/_metadata` */
export function metadataPath(dir: CheckpointDirectory): string {
  return `${directoryName(dir)}/${METADATA_FILE_NAME}`;
}

/** `chk-0000000012/_metadata.inprogress` */
export function metadataTempPath(dir: CheckpointDirectory): string {
  return `${directoryName(dir)}/${METADATA_TEMP_FILE_NAME}`;
}

/** `chk-0000000012/task-3-1.state`, or `chk-0000000012/task-3-1-e42.state` with an epoch. */
export function taskStatePath(dir: CheckpointDirectory, task: TaskId, epoch?: number): string {
  return `${directoryName(dir)}/${taskStateFileName(task, epoch)}`;
}

/** Splits a task state path back into its directory and task; undefined unless both parts parse. */
export function parseTaskStatePath(path: string): { dir: CheckpointDirectory; task: TaskId } | undefined {
  const slash = path.indexOf('/');
  if (slash < 0 || path.indexOf('/', slash + 1) >= 0) return undefined;
  const dir = parseDirectoryName(path.slice(0, slash));
  const task = parseTaskStateFileName(path.slice(slash + 1));
  return dir === undefined || task === undefined ? undefined : { dir, task };
}

/** Folder of shared state files under a checkpoint storage root (and under a self-contained savepoint). */
export const SHARED_DIR_NAME = 'shared';

const SHARED_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Storage-relative path of shared state file `name`; names are plain file names (no separators, no dot-dot). */
export function sharedFilePath(name: string): string {
  if (!SHARED_FILE_NAME.test(name)) {
    throw new TypeError(`"${name}" is not a valid shared state file name (letters, digits, '.', '_', '-'; at most 200)`);
  }
  return `${SHARED_DIR_NAME}/${name}`;
}

/** The file name of a storage-relative shared path, or undefined when `path` is not one. */
export function parseSharedFilePath(path: string): string | undefined {
  const prefix = `${SHARED_DIR_NAME}/`;
  if (!path.startsWith(prefix)) return undefined;
  const name = path.slice(prefix.length);
  return SHARED_FILE_NAME.test(name) ? name : undefined;
}
