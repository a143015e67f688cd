import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../lib/storage/object-store.ts';

const sha = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');
const text = (data: Uint8Array | undefined): string | undefined => (data === undefined ? undefined : Buffer.from(data).toString('utf8'));

/**
 * What every ObjectStore adapter must do (see lib/storage/object-store.ts). `make` gives a store on a fresh,
 * empty location each time; `atomicCreate` says whether concurrent create-if-absent on one path is checked (a store
 * behind a server that ignores conditional writes can only be checked sequentially).
 */
export function objectStoreContract(name: string, make: () => Promise<ObjectStore>, options: { atomicCreate: boolean }): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let local: string;
    beforeAll(async () => {
      local = await mkdtemp(join(tmpdir(), 'sluice-object-store-'));
    });
    afterAll(async () => {
      await rm(local, { recursive: true, force: true });
    });

    it('answers undefined, false or empty for what does not exist', async () => {
      const store = await make();
      expect(await store.get('a/b')).toBeUndefined();
      expect(await store.size('a/b')).toBeUndefined();
      expect(await store.digest('a/b')).toBeUndefined();
      expect(await store.getFile('a/b', join(local, 'missing'))).toBeUndefined();
      expect(await store.list('')).toEqual([]);
      expect(await store.list('a')).toEqual([]);
      expect(await store.listFolders('')).toEqual([]);
      await store.delete(['a/b']);
      await store.deleteFolder('a');
      await store.removeTemporary('');
    });

    it('puts whole objects, replaces them whole, and reads back their bytes, size and digest', async () => {
      const store = await make();
      const first = randomBytes(1000);
      await store.put('chk-1/x', first, sha(first));
      expect(Buffer.from((await store.get('chk-1/x')) ?? []).equals(first)).toBe(true);
      expect(await store.size('chk-1/x')).toBe(1000);
      expect(await store.digest('chk-1/x')).toEqual({ bytes: 1000, sha256: sha(first) });
      const second = Buffer.from('shorter');
      await store.put('chk-1/x', second);
      expect(text(await store.get('chk-1/x'))).toBe('shorter');
      expect(await store.digest('chk-1/x')).toEqual({ bytes: 7, sha256: sha(second) });
    });

    it('creates an object only if absent: the first caller wins, later ones change nothing', async () => {
      const store = await make();
      expect(await store.putIfAbsent('m/_metadata', Buffer.from('first'))).toBe(true);
      expect(await store.putIfAbsent('m/_metadata', Buffer.from('second'))).toBe(false);
      expect(text(await store.get('m/_metadata'))).toBe('first');
      await store.put('m/other', Buffer.from('x'));
      expect(await store.putIfAbsent('m/other', Buffer.from('y'))).toBe(false);
      expect(text(await store.get('m/other'))).toBe('x');
    });

    it.runIf(options.atomicCreate)('lets exactly one of many concurrent create-if-absent calls on one path win', async () => {
      const store = await make();
      const results = await Promise.all([0, 1, 2, 3, 4].map((i) => store.putIfAbsent('race/_metadata', Buffer.from(`writer-${i}`))));
      expect(results.filter((r) => r)).toHaveLength(1);
      expect(text(await store.get('race/_metadata'))).toBe(`writer-${results.indexOf(true)}`);
    });

    it('publishes a local file and copies an object to a local file, with their digests', async () => {
      const store = await make();
      const data = randomBytes(64 * 1024 + 7);
      const source = join(local, `source-${randomBytes(4).toString('hex')}`);
      await writeFile(source, data);
      expect(await store.putFile('shared/a.sst', source)).toEqual({ bytes: data.length, sha256: sha(data) });
      expect(await store.size('shared/a.sst')).toBe(data.length);
      const target = join(local, randomBytes(4).toString('hex'), 'nested', 'copy.sst');
      expect(await store.getFile('shared/a.sst', target)).toEqual({ bytes: data.length, sha256: sha(data) });
      expect((await readFile(target)).equals(data)).toBe(true);
    });

    it('lists every object under a folder at any depth, and the folders directly under one', async () => {
      const store = await make();
      const paths = ['chk-1/a', 'chk-1/b', 'chk-2/a', 'shared/s1', 'shared/s2', 'shared/s3', 'record.json'];
      for (const p of paths) await store.put(p, Buffer.from(p));
      expect((await store.list('')).sort()).toEqual([...paths].sort());
      expect((await store.list('chk-1')).sort()).toEqual(['chk-1/a', 'chk-1/b']);
      expect((await store.list('shared')).sort()).toEqual(['shared/s1', 'shared/s2', 'shared/s3']);
      expect((await store.listFolders('')).sort()).toEqual(['chk-1', 'chk-2', 'shared']);
    });

    it('deletes objects and folders, missing ones included, and leaves the rest', async () => {
      const store = await make();
      for (const p of ['chk-1/a', 'chk-1/b', 'chk-2/a', 'keep']) await store.put(p, Buffer.from(p));
      await store.delete(['chk-1/a', 'chk-1/missing']);
      expect((await store.list('')).sort()).toEqual(['chk-1/b', 'chk-2/a', 'keep']);
      await store.deleteFolder('chk-2');
      expect((await store.list('')).sort()).toEqual(['chk-1/b', 'keep']);
      expect(await store.listFolders('')).toEqual(['chk-1']);
      await store.removeTemporary('');
      expect((await store.list('')).sort()).toEqual(['chk-1/b', 'keep']);
    });

    it('names objects for messages under its location', async () => {
      const store = await make();
      expect(store.describe('chk-1/a')).toContain('chk-1');
      expect(store.describe('chk-1/a').startsWith(store.describe())).toBe(true);
    });
  });
}
