import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SharedStateDirectory } from '../../lib/storage/fs/shared-state-directory.ts';
import { runSharedStateStoreContract, type ListableSharedStateStore } from './shared-state-store.contract.ts';

/** The one place this runner builds the implementation. */
function createSharedStateStore(checkpointDir: string): ListableSharedStateStore {
  return new SharedStateDirectory(checkpointDir);
}

runSharedStateStoreContract('SharedStateDirectory', async () => {
  const root = await mkdtemp(join(tmpdir(), 'sluice-shared-dir-'));
  return {
    store: () => createSharedStateStore(root),
    dispose: () => rm(root, { recursive: true, force: true }),
  };
});
