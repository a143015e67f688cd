import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { FileCheckpointStorage, FileSavepointStorage, SnapshotDirectory } from '../../../lib/storage/index.ts';
import {
  defaultSavepointLocation,
  isRemoteLocation,
  openCheckpointStorageAt,
  openSavepointStorageAt,
  openSnapshotAt,
  registerStorageScheme,
  registeredStorageSchemes,
} from '../../../lib/storage/storage-locations.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-locations-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('storage locations', () => {
  it('opens local folders itself', async () => {
    expect(await openCheckpointStorageAt(join(root, 'chk'))).toBeInstanceOf(FileCheckpointStorage);
    expect(await openSavepointStorageAt(join(root, 'sp'))).toBeInstanceOf(FileSavepointStorage);
    expect(isRemoteLocation('C:/checkpoints')).toBe(false);
  });

  it('refuses a scheme nobody registered, naming what would enable s3://', async () => {
    await expect(openCheckpointStorageAt('gs://bucket/x')).rejects.toBeInstanceOf(ConfigError);
    await expect(openCheckpointStorageAt('gs://bucket/x')).rejects.toThrow(/unsupported checkpoint location "gs:\/\/bucket\/x"/);
  });

  it('opens a registered scheme through the module registered for it, and lists it for other threads', async () => {
    const module = join(root, 'memo-scheme.mjs');
    await writeFile(
      module,
      'export function openCheckpointStorage(l) { return { opened: "checkpoints", at: l }; }\n' +
        'export function openSavepointStorage(l) { return { opened: "savepoints", at: l, openSnapshot: (n) => ({ snapshot: n, in: l }) }; }\n',
    );
    registerStorageScheme('Memo', pathToFileURL(module).href);
    expect(registeredStorageSchemes()['memo']).toBe(pathToFileURL(module).href);
    expect(await openCheckpointStorageAt('memo://a/b')).toEqual({ opened: 'checkpoints', at: 'memo://a/b' });
    expect(await openSavepointStorageAt('MEMO://a/sp')).toMatchObject({ opened: 'savepoints', at: 'MEMO://a/sp' });
  });

  it('opens a savepoint folder to restore from: a local directory, or through the savepoint storage of its parent', async () => {
    expect(await openSnapshotAt(join(root, 'sp', 'savepoint-0000000001-1'))).toBeInstanceOf(SnapshotDirectory);
    // The memo scheme was registered by the test above.
    expect(await openSnapshotAt('memo://a/sp/savepoint-0000000001-1/')).toEqual({ snapshot: 'savepoint-0000000001-1', in: 'memo://a/sp' });
    await expect(openSnapshotAt('memo://bucket')).rejects.toThrow(/--restore memo:\/\/bucket: not a savepoint folder/);
    await expect(openSnapshotAt('memo://a/sp/savepoint-0000000001-1?x=1')).rejects.toBeInstanceOf(ConfigError);
    await expect(openSnapshotAt('gs://bucket/sp/savepoint-0000000001-1')).rejects.toThrow(/unsupported savepoint location "gs:\/\/bucket\/sp"/);
  });

  it('puts default savepoints beside the checkpoints, locally and remotely', () => {
    expect(defaultSavepointLocation('chk', 'savepoints')).toBe(join('chk', 'savepoints'));
    expect(defaultSavepointLocation('s3://b/p/?commitTable=t', 'savepoints')).toBe('s3://b/p/savepoints');
    expect(defaultSavepointLocation('s3://b', 'savepoints')).toBe('s3://b/savepoints');
  });
});
