import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import { FencedError } from '../../../lib/core/index.ts';
import { FENCE_DIR } from '../../../lib/storage/fence-records.ts';
import { FsObjectStore, ObjectCheckpointStorage } from '../../../lib/storage/index.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-fence-cost-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A folder store that counts how often the fence records are read. */
class CountingStore extends FsObjectStore {
  fenceReads = 0;
  override list(dir: string): Promise<string[]> {
    if (dir === FENCE_DIR) this.fenceReads++;
    return super.list(dir);
  }
}

describe('fenced task-state writes', () => {
  it('read the recorded fence once per checkpoint id, however many tasks write', async () => {
    const store = new CountingStore(join(root, 'chk'));
    const storage = new ObjectCheckpointStorage(store);
    const token = { attempt: 0, epoch: 1 };
    await storage.fence(token);
    store.fenceReads = 0;
    for (const checkpointId of [1, 2]) {
      await Promise.all(
        [0, 1, 2, 3].map((subtask) => storage.writeTaskState(checkpointId, taskStateFileName({ vertex: 1, subtask }), Buffer.from('x'), token)),
      );
    }
    expect(store.fenceReads).toBe(2);
    // Without a token nothing is read.
    await storage.writeTaskState(3, taskStateFileName({ vertex: 1, subtask: 0 }), Buffer.from('x'));
    expect(store.fenceReads).toBe(2);
  });

  it('see a fence raised by another process at the next checkpoint', async () => {
    const store = new FsObjectStore(join(root, 'chk'));
    const worker = new ObjectCheckpointStorage(store);
    const coordinator = new ObjectCheckpointStorage(new FsObjectStore(join(root, 'chk')));
    const old = { attempt: 0, epoch: 0 };
    await worker.writeTaskState(1, taskStateFileName({ vertex: 1, subtask: 0 }), Buffer.from('x'), old);
    await coordinator.fence({ attempt: 1, epoch: 1 });
    await expect(worker.writeTaskState(2, taskStateFileName({ vertex: 1, subtask: 0 }), Buffer.from('x'), old)).rejects.toBeInstanceOf(FencedError);
    expect(await store.list('chk-0000000002')).toEqual([]);
  });
});
