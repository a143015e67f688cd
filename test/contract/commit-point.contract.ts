/**
 * The contract of a CheckpointCommitPoint (DynamoDB item, S3 conditional put): the one atomic step that makes a
 * checkpoint complete. What an exactly-once user relies on: of any number of committers of one checkpoint id,
 * exactly one wins and its metadata is what every reader sees; a retry of the winner (its response lost, by the
 * SDK's own retry or by the caller's) is success, not a conflict; a commit interrupted before its metadata was
 * written is finished by the retry; forgetting is idempotent. A runner calls `runCommitPointContract` with a
 * factory that makes a fresh location per test.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SluiceError } from '../../lib/core/index.ts';
import { InternalError } from '../../lib/core/index.ts';
import type { CheckpointCommitPoint } from '../../lib/storage/commit-point.ts';
import { CheckpointIoError } from '../../lib/storage/errors.ts';

export interface CommitPointFixture {
  /** A commit point on this fixture's location; each call a separate one, as another committer process has. */
  commitPoint(): CheckpointCommitPoint;
  /** The object at a storage-relative path of the location, undefined when absent. */
  readObject(path: string): Promise<Uint8Array | undefined>;
  /** Failures injected into the next commit of any commit point of this fixture. */
  readonly faults: CommitPointFaults;
  dispose(): Promise<void>;
}

export interface CommitPointFaults {
  /**
   * The write that decides the commit (DynamoDB: the conditional item put; S3: the conditional object put) is
   * applied, its response is lost, and the client sends it again, as the SDK's retry does after a timeout.
   */
  loseDecidingResponseAndResend(): void;
  /** The deciding write is applied and its response lost; the caller gets the error. */
  loseDecidingResponse(): void;
  /** The write of the metadata object fails before it reaches the store. */
  failMetadataWrite(): void;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const metadata = (id: number, text: string): { path: string; bytes: Uint8Array; sha256: string } => {
  const bytes = new Uint8Array(Buffer.from(`metadata of ${id}: ${text}`));
  return { path: `chk-${String(id).padStart(10, '0')}/_metadata`, bytes, sha256: sha256(bytes) };
};
const text = (bytes: Uint8Array | undefined): string | undefined => (bytes === undefined ? undefined : Buffer.from(bytes).toString());

export function runCommitPointContract(name: string, createFixture: () => Promise<CommitPointFixture>): void {
  describe(`CheckpointCommitPoint contract: ${name}`, () => {
    let fixture: CommitPointFixture;
    beforeEach(async () => {
      fixture = await createFixture();
    });
    afterEach(async () => {
      await fixture.dispose();
    });

    async function commit(point: CheckpointCommitPoint, id: number, m: ReturnType<typeof metadata>): Promise<void> {
      await point.commit(id, m.path, m.bytes, m.sha256);
    }

    it('publishes the metadata of a commit, readable right after, and records it when it keeps records', async () => {
      const point = fixture.commitPoint();
      const m = metadata(1, 'a');
      await commit(point, 1, m);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
      const records = await fixture.commitPoint().records();
      if (records !== undefined) expect(records.get(1)).toMatchObject({ metadataPath: m.path, sha256: m.sha256, bytes: m.bytes.byteLength });
    });

    it('accepts the same commit again (a retry) and changes nothing', async () => {
      const m = metadata(2, 'a');
      await commit(fixture.commitPoint(), 2, m);
      await commit(fixture.commitPoint(), 2, m);
      await commit(fixture.commitPoint(), 2, m);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
      const records = await fixture.commitPoint().records();
      if (records !== undefined) expect([...records.keys()]).toEqual([2]);
    });

    it('refuses other metadata for a committed id (typed, not retriable) and keeps the first', async () => {
      const first = metadata(3, 'first');
      const second = metadata(3, 'second');
      await commit(fixture.commitPoint(), 3, first);
      const refused = await commit(fixture.commitPoint(), 3, second).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InternalError);
      expect((refused as SluiceError).retriable).toBe(false);
      expect(text(await fixture.readObject(first.path))).toBe(text(first.bytes));
      const records = await fixture.commitPoint().records();
      if (records !== undefined) expect(records.get(3)?.sha256).toBe(first.sha256);
    });

    it('lets exactly one of many concurrent committers of one id win, and its metadata is what is stored', async () => {
      const contenders = Array.from({ length: 8 }, (_, i) => metadata(4, `writer ${i}`));
      const outcomes = await Promise.allSettled(contenders.map((m) => commit(fixture.commitPoint(), 4, m)));
      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
      expect(won).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(InternalError);
      const winner = contenders[won[0] as number] as ReturnType<typeof metadata>;
      expect(text(await fixture.readObject(winner.path))).toBe(text(winner.bytes));
      const records = await fixture.commitPoint().records();
      if (records !== undefined) expect(records.get(4)?.sha256).toBe(winner.sha256);
    });

    it('lets concurrent committers of identical metadata all succeed (a retry racing its first try)', async () => {
      const m = metadata(5, 'same');
      const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => commit(fixture.commitPoint(), 5, m)));
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
    });

    it("succeeds when the SDK re-sends a deciding write whose response was lost (the first try won)", async () => {
      const m = metadata(6, 'a');
      fixture.faults.loseDecidingResponseAndResend();
      await commit(fixture.commitPoint(), 6, m);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
      // Still exactly once: another writer is refused.
      await expect(commit(fixture.commitPoint(), 6, metadata(6, 'b'))).rejects.toBeInstanceOf(InternalError);
    });

    it('reports a lost response as a retriable I/O error, and the caller retrying then succeeds', async () => {
      const m = metadata(7, 'a');
      const point = fixture.commitPoint();
      fixture.faults.loseDecidingResponse();
      const failed = await commit(point, 7, m).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(CheckpointIoError);
      expect((failed as SluiceError).retriable).toBe(true);
      await commit(point, 7, m);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
      await expect(commit(fixture.commitPoint(), 7, metadata(7, 'b'))).rejects.toBeInstanceOf(InternalError);
    });

    it('finishes a commit whose metadata write failed when it is retried, and no other writer takes the id meanwhile', async () => {
      const m = metadata(8, 'a');
      fixture.faults.failMetadataWrite();
      await expect(commit(fixture.commitPoint(), 8, m)).rejects.toBeInstanceOf(CheckpointIoError);
      const records = await fixture.commitPoint().records();
      // A commit point that keeps records has decided already: the id is ours, and another writer is refused.
      if (records !== undefined) await expect(commit(fixture.commitPoint(), 8, metadata(8, 'b'))).rejects.toBeInstanceOf(InternalError);
      await commit(fixture.commitPoint(), 8, m);
      expect(text(await fixture.readObject(m.path))).toBe(text(m.bytes));
    });

    it('lists every commit and forgets idempotently (twice, and ids never committed)', async () => {
      const ms = [11, 12, 13].map((id) => metadata(id, 'x'));
      for (const [i, m] of ms.entries()) await commit(fixture.commitPoint(), 11 + i, m);
      const point = fixture.commitPoint();
      const before = await point.records();
      if (before !== undefined) expect([...before.keys()].sort((a, b) => a - b)).toEqual([11, 12, 13]);
      await point.forget(12);
      await point.forget(12);
      await point.forget(99);
      const after = await fixture.commitPoint().records();
      if (after !== undefined) expect([...after.keys()].sort((a, b) => a - b)).toEqual([11, 13]);
      // Forgetting drops the record only: the metadata objects are the storage's to delete.
      expect(text(await fixture.readObject((ms[0] as ReturnType<typeof metadata>).path))).toBe(text(ms[0]?.bytes));
    });
  });
}
