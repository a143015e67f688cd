import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as FsPromises from 'node:fs/promises';

// A file system without hard links (exFAT, vboxsf, many SMB and FUSE mounts): link(2) fails with EPERM or ENOTSUP.
const linkFailure = vi.hoisted(() => ({ code: undefined as string | undefined }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof FsPromises>();
  return {
    ...actual,
    link: (existing: string, target: string) => {
      if (linkFailure.code === undefined) return actual.link(existing, target);
      return Promise.reject(Object.assign(new Error(`${linkFailure.code}: operation not permitted, link`), { code: linkFailure.code }));
    },
  };
});

const { FsObjectStore } = await import('../../../lib/storage/fs/fs-object-store.ts');
const { FileCheckpointStorage } = await import('../../../lib/storage/fs/file-checkpoint-storage.ts');

describe('FsObjectStore on a file system without hard links', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-no-links-'));
  });
  afterEach(async () => {
    linkFailure.code = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  for (const code of ['EPERM', 'ENOTSUP']) {
    it(`creates an absent object once and refuses the second create (link fails with ${code})`, async () => {
      linkFailure.code = code;
      const store = new FsObjectStore(dir);
      expect(await store.putIfAbsent('chk-1/_metadata', new TextEncoder().encode('first'))).toBe(true);
      expect(await store.putIfAbsent('chk-1/_metadata', new TextEncoder().encode('second'))).toBe(false);
      expect(await readFile(join(dir, 'chk-1/_metadata'), 'utf8')).toBe('first');
      // No temporary file is left beside it.
      expect(await store.list('chk-1')).toEqual(['chk-1/_metadata']);
    });
  }

  it('lets a checkpointed job fence its folder and commit a checkpoint there', async () => {
    linkFailure.code = 'EPERM';
    const storage = new FileCheckpointStorage(dir);
    await storage.fence({ attempt: 0, epoch: 5 });
    expect(await storage.currentFence()).toEqual({ attempt: 0, epoch: 5 });
  });

  it('still reports other link failures', async () => {
    linkFailure.code = 'EIO';
    const store = new FsObjectStore(dir);
    await expect(store.putIfAbsent('x', new Uint8Array([1]))).rejects.toMatchObject({ code: 'EIO' });
  });
});
