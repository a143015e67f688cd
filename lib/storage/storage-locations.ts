import { join } from 'node:path';
import { ConfigError } from '../core/index.ts';
import type { CheckpointStorage } from './checkpoint-storage.ts';
import { FileCheckpointStorage } from './fs/file-checkpoint-storage.ts';
import { FileSavepointStorage } from './fs/file-savepoint-storage.ts';
import { SnapshotDirectory } from './fs/snapshot-directory.ts';
import type { SavepointStorage, SnapshotReader } from './savepoint-storage.ts';

/**
 * What a module registered for a location scheme (`s3`) exports: how to open checkpoint and savepoint storage at a
 * location of that scheme. lib/connectors/aws/s3/open-s3-checkpoint-storage.ts is the one for `s3://`.
 */
export interface StorageSchemeModule {
  openCheckpointStorage(location: string): CheckpointStorage | Promise<CheckpointStorage>;
  openSavepointStorage(location: string): SavepointStorage | Promise<SavepointStorage>;
}

/**
 * Location schemes and the URL of the module that opens them. The engine knows only local folders: a composition
 * root (the CLI, `sluice/aws`, a cluster worker's main) registers the rest, and the thread runner hands this table
 * to its worker threads, which load the module themselves (a storage instance cannot cross a thread). Loading by URL
 * keeps the engine free of imports of the connectors and of the AWS SDK for local jobs.
 */
const schemes = new Map<string, string>();

/** Opens `scheme://…` locations with the module at `moduleUrl` (a file: URL or package specifier). */
export function registerStorageScheme(scheme: string, moduleUrl: string): void {
  schemes.set(scheme.toLowerCase(), moduleUrl);
}

/** The registered schemes, to hand to another thread or process (see `registerStorageSchemes`). */
export function registeredStorageSchemes(): Record<string, string> {
  return Object.fromEntries(schemes);
}

/** Registers every scheme of a table from `registeredStorageSchemes` (in a worker thread). */
export function registerStorageSchemes(table: Readonly<Record<string, string>> | undefined): void {
  for (const [scheme, moduleUrl] of Object.entries(table ?? {})) registerStorageScheme(scheme, moduleUrl);
}

/** Whether a checkpoint location is an object store URI rather than a local folder. */
export function isRemoteLocation(location: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(location);
}

/** Where savepoints go when none is given: `<dir>/savepoints` locally, `<uri>/savepoints` (parameters dropped) remotely. */
export function defaultSavepointLocation(checkpointLocation: string, subdir: string): string {
  if (!isRemoteLocation(checkpointLocation)) return join(checkpointLocation, subdir);
  return `${checkpointLocation.replace(/[?#].*$/, '').replace(/\/+$/, '')}/${subdir}`;
}

async function schemeModule(location: string, what: string): Promise<StorageSchemeModule> {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(location)?.[1]?.toLowerCase() ?? '';
  const moduleUrl = schemes.get(scheme);
  if (moduleUrl === undefined) {
    const known = ['a local folder', ...[...schemes.keys()].map((s) => `${s}://…`)].join(' or ');
    const hint = scheme === 's3' ? ' (import "sluice/aws", or run the job with "sluice run", to enable s3://)' : '';
    throw new ConfigError(`unsupported ${what} location "${location}": use ${known}${hint} (--checkpoint-dir)`);
  }
  return (await import(moduleUrl)) as StorageSchemeModule;
}

/** The checkpoint storage at a location: a local folder, or a location of a registered scheme. */
export async function openCheckpointStorageAt(location: string): Promise<CheckpointStorage> {
  if (!isRemoteLocation(location)) return new FileCheckpointStorage(location);
  return (await schemeModule(location, 'checkpoint')).openCheckpointStorage(location);
}

/** The savepoint storage at a location: a local folder, or a location of a registered scheme. */
export async function openSavepointStorageAt(location: string): Promise<SavepointStorage> {
  if (!isRemoteLocation(location)) return new FileSavepointStorage(location);
  return (await schemeModule(location, 'savepoint')).openSavepointStorage(location);
}

/**
 * One savepoint or checkpoint folder to restore from (`--restore`, restore.json): a local directory, or a folder at a
 * location of a registered scheme (`s3://bucket/prefix/savepoints/savepoint-…`), read through the savepoint storage
 * of its parent. ConfigError for a URI that names no folder or whose scheme cannot read savepoints back.
 */
export async function openSnapshotAt(location: string): Promise<SnapshotReader> {
  if (!isRemoteLocation(location)) return new SnapshotDirectory(location);
  const trimmed = location.replace(/\/+$/, '');
  const cut = trimmed.lastIndexOf('/');
  // A folder below the bucket (or other root), without parameters: savepoint folders take none.
  if (/[?#]/.test(trimmed) || cut < trimmed.indexOf('://') + 3) {
    throw new ConfigError(`--restore ${location}: not a savepoint folder; pass one, e.g. s3://bucket/prefix/savepoints/savepoint-<id>-<time>`);
  }
  const savepoints = await openSavepointStorageAt(trimmed.slice(0, cut));
  if (savepoints.openSnapshot === undefined) {
    throw new ConfigError(`--restore ${location}: savepoints at this kind of location cannot be read back; copy the folder to a local directory`);
  }
  return savepoints.openSnapshot(trimmed.slice(cut + 1));
}
