/**
 * The contract of a SharedStateStore (a checkpoint directory's `shared/` folder, S3's `shared/` prefix): state files
 * that several checkpoints refer to. What a restore relies on: a put is readable right after, whole and verified,
 * from another store object on the same location; a retried put of the same bytes is harmless; a missing, changed
 * or misnamed file is a typed, non-retriable error rather than wrong state; listing shows exactly what was put and
 * not removed; removing is idempotent. A runner calls `runSharedStateStoreContract` with a factory that makes a
 * fresh location per call.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SluiceError } from '../../lib/core/index.ts';
import type { SharedStateFileRef, SharedStateStore } from '../../lib/state/index.ts';
import { CheckpointCorruptError } from '../../lib/storage/errors.ts';

/** What both implementations offer beyond the interface the state backends use: what retention needs. */
export interface ListableSharedStateStore extends SharedStateStore {
  /** Storage-relative paths of every shared file. */
  list(): Promise<string[]>;
  /** Deletes shared files; deleting one that is gone is fine. */
  remove(paths: readonly string[]): Promise<void>;
}

export interface SharedStateStoreLocation {
  /** A store on this location; each call a separate object, as another process has. */
  store(): ListableSharedStateStore;
  dispose(): Promise<void>;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export function runSharedStateStoreContract(name: string, createLocation: () => Promise<SharedStateStoreLocation>): void {
  describe(`SharedStateStore contract: ${name}`, () => {
    let location: SharedStateStoreLocation;
    let local: string;
    let files = 0;

    beforeEach(async () => {
      location = await createLocation();
      local = await mkdtemp(join(tmpdir(), 'sluice-shared-contract-'));
    });
    afterEach(async () => {
      await location.dispose();
      await rm(local, { recursive: true, force: true });
    });

    /** A local file holding `bytes` (random ones by default), for a put. */
    async function localFile(bytes: Uint8Array = randomBytes(4096)): Promise<{ path: string; bytes: Uint8Array }> {
      const path = join(local, `made-${++files}.sst`);
      await writeFile(path, bytes);
      return { path, bytes };
    }

    async function getBytes(store: SharedStateStore, ref: SharedStateFileRef): Promise<Buffer> {
      const target = join(local, 'restored', `got-${++files}`);
      await store.get(ref, target);
      return readFile(target);
    }

    it('puts a file and gets it back whole from another store on the same location, with a truthful ref', async () => {
      const file = await localFile();
      const ref = await location.store().put('000001-a.sst', file.path);
      expect(ref).toEqual({ path: 'shared/000001-a.sst', bytes: file.bytes.byteLength, sha256: sha256(file.bytes) });
      await rm(file.path, { force: true }); // the caller may delete (or have lost) its local file after the put
      const other = location.store();
      expect(Buffer.compare(await getBytes(other, ref), Buffer.from(file.bytes))).toBe(0);
      // `location` is optional (without it only the same object is the same area); when given, it names the area.
      expect(other.location).toBe(location.store().location);
    });

    it('round-trips an empty file and a file of several MiB', async () => {
      const store = location.store();
      for (const bytes of [new Uint8Array(0), randomBytes(3 * 1024 * 1024 + 17)]) {
        const file = await localFile(bytes);
        const ref = await store.put(`sized-${bytes.byteLength}.sst`, file.path);
        expect(ref.bytes).toBe(bytes.byteLength);
        expect(Buffer.compare(await getBytes(store, ref), Buffer.from(bytes))).toBe(0);
      }
    });

    it('takes a retried put of the same bytes (a repeated asynchronous phase) and keeps one file', async () => {
      const store = location.store();
      const bytes = randomBytes(1000);
      const first = await store.put('000002.sst', (await localFile(bytes)).path);
      const again = await location.store().put('000002.sst', (await localFile(bytes)).path);
      expect(again).toEqual(first);
      expect(await store.list()).toEqual(['shared/000002.sst']);
      expect(Buffer.compare(await getBytes(store, again), bytes)).toBe(0);
    });

    it('replaces other bytes under a name (a leftover of a failed attempt): the returned ref is what a get gives', async () => {
      const store = location.store();
      await store.put('000006.sst', (await localFile(randomBytes(500))).path);
      const newer = randomBytes(700);
      const ref = await location.store().put('000006.sst', (await localFile(newer)).path);
      expect(ref).toEqual({ path: 'shared/000006.sst', bytes: newer.byteLength, sha256: sha256(newer) });
      expect(Buffer.compare(await getBytes(store, ref), newer)).toBe(0);
    });

    it('overwrites the local target of a get, creating its folders', async () => {
      const store = location.store();
      const file = await localFile();
      const ref = await store.put('000003.sst', file.path);
      const target = join(local, 'deep', 'er', 'target.sst');
      await store.get(ref, target);
      await writeFile(target, 'stale bytes the caller left there');
      await store.get(ref, target);
      expect(Buffer.compare(await readFile(target), Buffer.from(file.bytes))).toBe(0);
    });

    it('refuses a file whose size or sha256 is not what the reference records (corrupt, not retriable)', async () => {
      const store = location.store();
      const ref = await store.put('000004.sst', (await localFile()).path);
      for (const wrong of [{ ...ref, sha256: sha256(Buffer.from('other')) }, { ...ref, bytes: ref.bytes + 1 }]) {
        const error = await store.get(wrong, join(local, `wrong-${++files}`)).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(CheckpointCorruptError);
        expect((error as SluiceError).retriable).toBe(false);
      }
    });

    it('reports a missing file as corrupt (not retriable), never as an empty one', async () => {
      const store = location.store();
      const file = await localFile();
      const ref = { path: 'shared/never-put.sst', bytes: file.bytes.byteLength, sha256: sha256(file.bytes) };
      const target = join(local, 'missing-target');
      const error = await store.get(ref, target).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointCorruptError);
      expect((error as SluiceError).retriable).toBe(false);
      expect(existsSync(target)).toBe(false);
    });

    it('refuses references and names that are not plain shared file names', async () => {
      const store = location.store();
      const file = await localFile();
      const ref = await store.put('000005.sst', file.path);
      for (const path of ['chk-0000000001/_metadata', 'shared/../chk-0000000001/_metadata', '../outside.sst', 'shared/a/b.sst']) {
        await expect(store.get({ ...ref, path }, join(local, `bad-${++files}`))).rejects.toBeInstanceOf(CheckpointCorruptError);
      }
      for (const bad of ['../escape.sst', 'a/b.sst', '', '.hidden']) {
        await expect(store.put(bad, (await localFile()).path)).rejects.toThrow();
      }
      expect(await store.list()).toEqual(['shared/000005.sst']);
    });

    it('lists exactly the files put and not removed, from any store on the location', async () => {
      const store = location.store();
      expect(await store.list()).toEqual([]);
      const names = ['000010.sst', '000011.sst', '000012-x.blob'];
      for (const n of names) await store.put(n, (await localFile()).path);
      expect((await location.store().list()).sort()).toEqual(names.map((n) => `shared/${n}`).sort());
      await store.remove(['shared/000011.sst']);
      expect((await location.store().list()).sort()).toEqual(['shared/000010.sst', 'shared/000012-x.blob']);
    });

    it('removes idempotently: twice, nothing, and files never put; a removed file then reads as missing', async () => {
      const store = location.store();
      const ref = await store.put('000020.sst', (await localFile()).path);
      await store.remove([ref.path, 'shared/never-put.sst']);
      await location.store().remove([ref.path]);
      await store.remove([]);
      expect(await store.list()).toEqual([]);
      await expect(store.get(ref, join(local, 'gone'))).rejects.toBeInstanceOf(CheckpointCorruptError);
    });

    it('keeps locations apart', async () => {
      const elsewhere = await createLocation();
      try {
        await location.store().put('000030.sst', (await localFile()).path);
        expect(await elsewhere.store().list()).toEqual([]);
        const here = location.store().location;
        if (here !== undefined) expect(elsewhere.store().location).not.toBe(here);
      } finally {
        await elsewhere.dispose();
      }
    });
  });
}
