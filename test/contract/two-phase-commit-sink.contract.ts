/**
 * The contract of a TwoPhaseCommitSink (JSONL part files, DynamoDB transactions), as the runtime drives it and as an
 * exactly-once user relies on it: nothing is visible before its checkpoint's commit; a commit makes exactly the
 * records of its transactions visible; committing again (a restore re-commits what its checkpoint holds) changes
 * nothing; a commit that crashed between its chunks (part files, transactions) is finished by the re-commit with
 * every record exactly once; what a crashed attempt left uncommitted never becomes visible and is cleaned up, while
 * what the restored checkpoint holds (any subtask's share) and what the current attempt writes is never touched.
 *
 * Records are identified by a string id; a fixture maps an id to the sink's record and reads back the ids a reader
 * sees, each as many times as it is visible (DynamoDB: a counter per item that each commit adds 1 to, so a chunk
 * applied twice shows). Committables go through the task-state codec between attempts, as a checkpoint stores them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { batchOf } from '../../lib/core/index.ts';
import type { Committer, SinkContext, TwoPhaseCommitSink, TwoPhaseCommitSinkWriter } from '../../lib/connectors/sink.ts';
import { decodeTaskSnapshot, encodeTaskSnapshot } from '../../lib/storage/task-state-codec.ts';

export interface TwoPhaseCommitSinkFixture<T, C> {
  /** The sink on this fixture's output; each call a new sink object, as a restarted process builds. */
  sink(): TwoPhaseCommitSink<T, C>;
  /** The record with this id. */
  record(id: string): T;
  /** Ids of the records a reader of the output sees now, sorted, each as many times as it is visible. */
  visible(): Promise<string[]>;
  /** What uncommitted transactions left in the output (hidden files, …), sorted; [] when nothing. */
  leftovers(): Promise<string[]>;
  /** Records that one checkpoint's transaction spreads over several chunks (part files, TransactWriteItems calls). */
  readonly recordsForSeveralChunks: number;
  /**
   * From now on, a commit applies `chunks` chunks (renames, transactions) and then fails every further one, as a
   * process that dies between them; `recover` ends that (the next attempt runs on a healthy process).
   */
  crashAfterChunks(chunks: number): void;
  recover(): void;
  dispose(): Promise<void>;
}

/** A sink subtask's context; the one place the suite builds it. */
export function sinkContext(subtask: number, epoch: number, parallelism = 2): SinkContext {
  // Attempts of the suite's scenarios follow each other: attempt n has epoch n, as a job's restarts do.
  return { subtask, parallelism, operatorName: 'contract-sink', fencing: { attempt: epoch - 1, epoch }, checkpointing: true };
}

/** Committables as a restored checkpoint gives them back: encoded and decoded by the task-state codec. */
function throughCheckpoint<C>(committables: readonly C[]): C[] {
  const bytes = encodeTaskSnapshot({ vertex: 1, subtask: 0, operators: [{ nodeId: 1, watermark: 0, operatorState: [...committables] }] });
  return decodeTaskSnapshot(bytes).operators[0]?.operatorState as C[];
}

const ids = (tag: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${tag}-${String(i).padStart(4, '0')}`);
const sorted = (values: readonly string[]): string[] => [...values].sort();

export function runTwoPhaseCommitSinkContract<T, C>(name: string, createFixture: () => Promise<TwoPhaseCommitSinkFixture<T, C>>): void {
  describe(`TwoPhaseCommitSink contract: ${name}`, () => {
    let fixture: TwoPhaseCommitSinkFixture<T, C>;
    const open: { close?(): void | Promise<void> }[] = [];

    beforeEach(async () => {
      fixture = await createFixture();
    });
    afterEach(async () => {
      for (const writer of open.splice(0)) await writer.close?.();
      await fixture.dispose();
    });

    async function writer(ctx: SinkContext, sink = fixture.sink()): Promise<TwoPhaseCommitSinkWriter<T, C>> {
      const w = await sink.createWriter(ctx);
      open.push(w);
      return w;
    }

    async function committer(ctx: SinkContext, sink = fixture.sink()): Promise<Committer<C>> {
      return sink.createCommitter(ctx);
    }

    async function write(w: TwoPhaseCommitSinkWriter<T, C>, recordIds: readonly string[]): Promise<void> {
      // In a few batches, as a task delivers them.
      for (let i = 0; i < recordIds.length; i += 40) {
        const slice = recordIds.slice(i, i + 40);
        await w.write(batchOf(slice.map((id) => fixture.record(id)), slice.map(() => 0)));
      }
    }

    /** Writes the records and pre-commits them at barrier `checkpointId`; the committables as the checkpoint holds them. */
    async function prepared(w: TwoPhaseCommitSinkWriter<T, C>, checkpointId: number, recordIds: readonly string[]): Promise<C[]> {
      await write(w, recordIds);
      return throughCheckpoint(await w.prepareCommit(checkpointId));
    }

    it('makes nothing visible before the commit, and exactly the pre-committed records after it', async () => {
      const ctx = sinkContext(0, 1);
      const w = await writer(ctx);
      const records = ids('a', 30);
      await write(w, records);
      expect(await fixture.visible()).toEqual([]);
      const committables = throughCheckpoint(await w.prepareCommit(1));
      expect(await fixture.visible()).toEqual([]);
      await write(w, ids('after-barrier', 5)); // the next transaction: not part of checkpoint 1
      await (await committer(ctx)).commit(committables);
      expect(await fixture.visible()).toEqual(sorted(records));
    });

    it('commits checkpoint after checkpoint, each adding its own records; an empty checkpoint commits nothing', async () => {
      const ctx = sinkContext(0, 1);
      const w = await writer(ctx);
      const c = await committer(ctx);
      await c.commit(await prepared(w, 1, ids('one', 10)));
      await c.commit(await prepared(w, 2, []));
      await c.commit(await prepared(w, 3, ids('three', 12)));
      await c.checkpointComplete?.(3);
      expect(await fixture.visible()).toEqual(sorted([...ids('one', 10), ...ids('three', 12)]));
      expect(await fixture.leftovers()).toEqual([]);
    });

    it('changes nothing when the same committables are committed again, by the same committer or after a restore', async () => {
      const ctx = sinkContext(0, 1);
      const w = await writer(ctx);
      const records = ids('r', fixture.recordsForSeveralChunks);
      const committables = await prepared(w, 1, records);
      const first = await committer(ctx);
      await first.commit(committables);
      await first.commit(committables);
      // A later attempt restored from checkpoint 1 commits its committables again, through a new sink object.
      const later = sinkContext(0, 2);
      const again = await committer(later);
      await fixture.sink().cleanUpDangling(later, committables);
      await again.commit(throughCheckpoint(committables));
      await again.checkpointComplete?.(2);
      expect(await fixture.visible()).toEqual(sorted(records));
      expect(await fixture.leftovers()).toEqual([]);
    });

    it('finishes a commit that crashed between its chunks when it is committed again: every record exactly once', async () => {
      const ctx = sinkContext(0, 1);
      const w = await writer(ctx);
      const records = ids('big', fixture.recordsForSeveralChunks);
      const committables = await prepared(w, 1, records);
      fixture.crashAfterChunks(1);
      await expect((await committer(ctx)).commit(committables)).rejects.toThrow();
      const partly = await fixture.visible();
      expect(partly.length).toBeGreaterThan(0); // the crash came between chunks: some are applied, not all
      expect(partly.length).toBeLessThan(records.length);
      fixture.recover();
      const restored = sinkContext(0, 2);
      await fixture.sink().cleanUpDangling(restored, committables);
      await (await committer(restored)).commit(throughCheckpoint(committables));
      expect(await fixture.visible()).toEqual(sorted(records));
    });

    it('finishes it too when the re-commit crashes again part-way and a third attempt commits', async () => {
      const records = ids('big', fixture.recordsForSeveralChunks);
      const committables = await prepared(await writer(sinkContext(0, 1)), 1, records);
      fixture.crashAfterChunks(1);
      await expect((await committer(sinkContext(0, 1))).commit(committables)).rejects.toThrow();
      fixture.recover();
      fixture.crashAfterChunks(1);
      await expect((await committer(sinkContext(0, 2))).commit(throughCheckpoint(committables))).rejects.toThrow();
      fixture.recover();
      await (await committer(sinkContext(0, 3))).commit(throughCheckpoint(committables));
      expect(await fixture.visible()).toEqual(sorted(records));
    });

    it('never shows what a crashed attempt left uncommitted, and cleans it up once the next attempt has a checkpoint', async () => {
      // Attempt 1: subtask 0 pre-committed checkpoint 1 (which never completed) and has a transaction open; subtask 1
      // has only an open transaction. Then the process dies.
      const crashed0 = await writer(sinkContext(0, 1));
      await prepared(crashed0, 1, ids('lost-pending', 20));
      const afterPreCommit = await fixture.leftovers();
      // Open transactions smaller than a chunk (a part file rolled over would wait as pending, like a pre-commit).
      await write(crashed0, ids('lost-open', 5));
      const crashed1 = await writer(sinkContext(1, 1));
      await write(crashed1, ids('lost-open-1', 5));
      for (const w of open.splice(0)) await w.close?.();
      // Attempt 2 starts fresh (no checkpoint completed): nothing to keep, the records are replayed.
      const contexts = [sinkContext(0, 2), sinkContext(1, 2)];
      for (const ctx of contexts) await fixture.sink().cleanUpDangling(ctx, []);
      // Open transactions were never pre-committed, so no checkpoint can hold them: clean-up removes them at once.
      // Pre-committed ones may be in another subtask's share of a checkpoint and may stay until one completes.
      for (const left of await fixture.leftovers()) expect(afterPreCommit).toContain(left);
      expect(await fixture.visible()).toEqual([]);
      const replayed = [ids('replayed-0', 25), ids('replayed-1', 25)];
      for (const [i, ctx] of contexts.entries()) {
        const committables = await prepared(await writer(ctx), 1, replayed[i] as string[]);
        const c = await committer(ctx);
        await c.commit(committables);
        await c.checkpointComplete?.(1);
      }
      expect(await fixture.visible()).toEqual(sorted(replayed.flat()));
      expect(await fixture.leftovers()).toEqual([]);
    });

    it("keeps the restored checkpoint's transactions of every subtask through every subtask's clean-up", async () => {
      // Attempt 1: checkpoint 1 completed (both subtasks pre-committed), then the process died before committing.
      const shares = [0, 1].map((subtask) => ids(`restored-${subtask}`, 20));
      const committed: C[][] = [];
      for (const subtask of [0, 1]) committed.push(await prepared(await writer(sinkContext(subtask, 1)), 1, shares[subtask] as string[]));
      for (const w of open.splice(0)) await w.close?.();
      // Attempt 2, restored at parallelism 2: each subtask cleans up (knowing only its own share), then commits it.
      // Subtask 0 runs ahead: it cleans up and commits before subtask 1 has even started.
      const ctx0 = sinkContext(0, 2);
      const ctx1 = sinkContext(1, 2);
      await fixture.sink().cleanUpDangling(ctx0, throughCheckpoint(committed[0] as C[]));
      await (await committer(ctx0)).commit(throughCheckpoint(committed[0] as C[]));
      await fixture.sink().cleanUpDangling(ctx1, throughCheckpoint(committed[1] as C[]));
      await (await committer(ctx1)).commit(throughCheckpoint(committed[1] as C[]));
      expect(await fixture.visible()).toEqual(sorted(shares.flat()));
    });

    it("never touches the current attempt's open transactions when another subtask cleans up", async () => {
      const ctx0 = sinkContext(0, 2);
      const ctx1 = sinkContext(1, 2);
      const w1 = await writer(ctx1);
      await write(w1, ids('current-1', 20)); // subtask 1 started first and is writing
      await fixture.sink().cleanUpDangling(ctx0, []);
      const committables = throughCheckpoint(await w1.prepareCommit(1));
      await (await committer(ctx1)).commit(committables);
      expect(await fixture.visible()).toEqual(sorted(ids('current-1', 20)));
    });

    it('commits the transactions of several subtasks independently, each record once', async () => {
      const results = await Promise.all(
        [0, 1, 2].map(async (subtask) => {
          const ctx = sinkContext(subtask, 1, 3);
          const w = await writer(ctx);
          const c = await committer(ctx);
          const recordIds = ids(`s${subtask}`, 30);
          await c.commit(await prepared(w, 1, recordIds));
          await c.commit(await prepared(w, 2, ids(`s${subtask}-next`, 5)));
          return [...recordIds, ...ids(`s${subtask}-next`, 5)];
        }),
      );
      expect(await fixture.visible()).toEqual(sorted(results.flat()));
    });
  });
}
