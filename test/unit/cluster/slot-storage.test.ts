import { describe, expect, it } from 'vitest';
import { FencedError } from '../../../lib/core/index.ts';
import { FileCheckpointStorage } from '../../../lib/storage/fs/file-checkpoint-storage.ts';
import { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';
import { ObjectTaskStateStore } from '../../../lib/storage/object-task-state-store.ts';
import { tempDir } from './slot-fixtures.ts';

describe('ObjectTaskStateStore for a cluster slot', () => {
  it('does not consult the job-wide fence record with checkFence false, and still names files by epoch', async () => {
    const dir = tempDir('sluice-slot-fence-');
    await new FileCheckpointStorage(dir).fence({ epoch: 9, attempt: 0 });
    const data = new Uint8Array([1, 2, 3]);
    await expect(new ObjectTaskStateStore(new FsObjectStore(dir)).writeTaskState(1, 'task-0-1.state', data, { epoch: 2, attempt: 0 })).rejects.toThrow(FencedError);
    const written = await new ObjectTaskStateStore(new FsObjectStore(dir), { checkFence: false }).writeTaskState(1, 'task-0-1.state', data, { epoch: 2, attempt: 0 });
    expect(written.path).toBe('chk-0000000001/task-0-1-e2.state');
    expect([...((await new FsObjectStore(dir).get(written.path)) ?? [])]).toEqual([1, 2, 3]);
  });
});
