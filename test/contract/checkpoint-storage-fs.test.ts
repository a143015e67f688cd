import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { FileCheckpointStorage } from '../../lib/storage/index.ts';
import { FsObjectStore } from '../../lib/storage/fs/fs-object-store.ts';
import { checkpointStorageContract } from './checkpoint-storage.contract.ts';
import { objectStoreContract } from './object-store.contract.ts';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-fs-contract-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

objectStoreContract('local folder (FsObjectStore)', () => Promise.resolve(new FsObjectStore(join(root, `store-${++counter}`))), {
  atomicCreate: true,
});

checkpointStorageContract('local folder (FileCheckpointStorage)', () => {
  const storage = new FileCheckpointStorage(join(root, `checkpoints-${++counter}`));
  return Promise.resolve({ storage, store: storage.store });
});
