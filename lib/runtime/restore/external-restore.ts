import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../core/index.ts';
import { parseDirectoryName } from '../../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import { CheckpointCorruptError } from '../../storage/errors.ts';
import type { SnapshotReader } from '../../storage/savepoint-storage.ts';
import { isRemoteLocation, openSnapshotAt } from '../../storage/storage-locations.ts';
import { checkCompatible, type CompatibilityOptions } from './restore-plan.ts';

/** A savepoint, or a checkpoint directory, named by `--restore`: read from where it is, not from checkpoint storage. */
export interface ExternalRestore {
  readonly metadata: CheckpointMetadata;
  /** Absolute path of the directory, or its URI (`s3://…`); worker threads open it themselves (openSnapshotAt). */
  readonly location: string;
  readonly reader: SnapshotReader;
  /** `savepoint /abs/path` or `checkpoint 12 (/abs/path)`, as in "restored from …". */
  readonly description: string;
}

/**
 * Opens the directory, verifies its metadata and every task file, and checks that this job can start from it:
 * the same number of key groups (parallelism may differ) and the same job graph. Problems are ConfigErrors: the
 * job does not start.
 */
export async function openExternalRestore(path: string, plan: PhysicalPlan, options: CompatibilityOptions = {}): Promise<ExternalRestore> {
  const reader = await openSnapshotAt(path);
  if (!(await reader.hasMetadata())) {
    throw new ConfigError(
      isRemoteLocation(path)
        ? `--restore ${reader.location}: not a savepoint or checkpoint folder (it has no _metadata object, so it is not complete); pass one savepoint-<id>-<time> folder`
        : await whyNotRestorable(reader.location),
    );
  }
  let metadata: CheckpointMetadata;
  try {
    metadata = await reader.readMetadata();
    await reader.verifyTaskFiles(metadata);
  } catch (err) {
    if (!(err instanceof CheckpointCorruptError)) throw err;
    // Without the storage error's advice (fall back to an older checkpoint), which does not apply to --restore.
    throw new ConfigError(`cannot restore from ${reader.location}: ${err.problem}`, { cause: err });
  }
  const what = metadata.savepoint ? `savepoint ${reader.location}` : `checkpoint ${metadata.checkpointId} (${reader.location})`;
  if (metadata.maxParallelism !== plan.maxParallelism) {
    throw new ConfigError(
      `cannot restore from ${what}: it was taken with maxParallelism ${metadata.maxParallelism} but the job now has ` +
        `${plan.maxParallelism}. Keyed state is kept in ${metadata.maxParallelism} key groups, which cannot be ` +
        `redistributed into another number; run with --max-parallelism ${metadata.maxParallelism} ` +
        `(any --parallelism up to ${metadata.maxParallelism} works)`,
    );
  }
  checkCompatible(metadata, plan, reader.location, options);
  return { metadata, location: reader.location, reader, description: what };
}

/**
 * `--restore` as restore.json records it and compares it: an absolute path, or a URI as given (a URI is not a
 * path: resolve() would turn `s3://b/p` into `<cwd>/s3:/b/p`).
 */
export function restoreSourceOf(restore: string): string {
  return isRemoteLocation(restore) ? restore.replace(/\/+$/, '') : resolve(restore);
}

async function whyNotRestorable(path: string): Promise<string> {
  let entries: string[];
  try {
    if (!(await stat(path)).isDirectory()) return `--restore ${path}: not a directory; pass a savepoint directory (savepoint-<id>-<time>)`;
    entries = await readdir(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return `--restore ${path}: no such directory`;
    throw err;
  }
  const inside = entries.filter((name) => parseDirectoryName(name) !== undefined).sort();
  const newest = inside[inside.length - 1];
  if (newest !== undefined) {
    return `--restore ${path}: this folder holds checkpoints or savepoints, not one of them; pass one directory, e.g. ${join(path, newest)}`;
  }
  return `--restore ${path}: not a savepoint or checkpoint directory (it has no _metadata file, so it is not complete)`;
}
