import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, InternalError, batchOf, type FencingToken } from '../../../lib/core/index.ts';
import { PartFileCommitError, jsonlFileSink } from '../../../lib/connectors/local/index.ts';
import type { JsonlFileSink, PartFileCommittable } from '../../../lib/connectors/local/index.ts';
import { isTwoPhaseCommitSink } from '../../../lib/connectors/sink.ts';
import type { SinkContext } from '../../../lib/connectors/sink.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-2pc-sink-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, `out-${dirCounter++}`);

/** Attempts by name; their files carry `fencingTag` of the token (`e<epoch>-a<attempt>`). */
const TOKENS: Record<string, FencingToken> = { attemptA: { attempt: 0, epoch: 7 }, attemptB: { attempt: 1, epoch: 8 }, old: { attempt: 0, epoch: 3 }, new: { attempt: 0, epoch: 4 },
  a1: { attempt: 0, epoch: 1 }, a2: { attempt: 1, epoch: 2 }, r1: { attempt: 0, epoch: 11 }, r2: { attempt: 0, epoch: 12 } };

function tx(subtask: number, parallelism: number, attempt: string | undefined, checkpointing = true): SinkContext {
  return { subtask, parallelism, operatorName: 'sink', fencing: attempt === undefined ? undefined : TOKENS[attempt], checkpointing };
}

const rows = (tag: string, from: number, to: number): string[] => {
  const out: string[] = [];
  for (let i = from; i < to; i++) out.push(`${tag}${i}`);
  return out;
};
const batch = (values: string[]) => batchOf(values, new Array<number>(values.length).fill(0));
const text = (values: string[]): string => values.map((v) => JSON.stringify(v) + '\n').join('');

/** What a reader of the directory sees: only names it may read, and their contents. */
function visible(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    out[name] = readFileSync(join(dir, name), 'utf8');
  }
  return out;
}

/** Readers see exactly the committed files, each complete, under part-<subtask>-<n>.jsonl names. */
function expectVisible(dir: string, expected: Record<string, string>): void {
  const seen = visible(dir);
  for (const name of Object.keys(seen)) expect(name).toMatch(/^part-\d+-\d+\.jsonl$/);
  expect(seen).toEqual(expected);
}

const hidden = (dir: string): string[] =>
  readdirSync(dir)
    .filter((n) => n.startsWith('.'))
    .sort();

function sinkOf(dir: string, options: { rollSizeBytes?: number; bufferSizeBytes?: number } = {}): JsonlFileSink<string> {
  return jsonlFileSink<string>({ dir, ...options });
}

describe('jsonlFileSink, two-phase commit', () => {
  it('is a two-phase-commit sink: write, prepare and commit make exactly the prepared data visible', async () => {
    const dir = freshDir();
    const sink = sinkOf(dir);
    expect(isTwoPhaseCommitSink(sink)).toBe(true);
    const writer = await sink.createWriter(tx(0, 1, 'a1'));
    const committer = await sink.createCommitter(tx(0, 1, 'a1'));

    expect(await writer.prepareCommit(1)).toEqual([]); // nothing written: no empty file
    expect(readdirSync(dir)).toEqual([]);

    await writer.write(batch(rows('x', 0, 3)));
    expectVisible(dir, {});
    const first = await writer.prepareCommit(2);
    expect(first).toEqual([
      { pendingPath: join(dir, '.part-0-0.jsonl.e1-a0.pending'), finalPath: join(dir, 'part-0-0.jsonl'), size: Buffer.byteLength(text(rows('x', 0, 3))) },
    ]);
    expectVisible(dir, {}); // pending is still hidden
    expect(hidden(dir)).toEqual(['.part-0-0.jsonl.e1-a0.pending']);

    await writer.write(batch(rows('y', 0, 2))); // the next transaction, under way while checkpoint 2 completes
    await committer.commit(first);
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('x', 0, 3)) });
    expect(hidden(dir)).toEqual(['.part-0-1.jsonl.e1-a0.inprogress']);

    const second = await writer.prepareCommit(3);
    await writer.finish?.();
    await writer.close?.();
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('x', 0, 3)) });
    await committer.commit(second);
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('x', 0, 3)), 'part-0-1.jsonl': text(rows('y', 0, 2)) });
    expect(hidden(dir)).toEqual([]);
  });

  it('commits idempotently: committing the same committables again (also after a restart) changes nothing', async () => {
    const dir = freshDir();
    const sink = sinkOf(dir);
    const writer = await sink.createWriter(tx(2, 3, 'a1'));
    await writer.write(batch(rows('x', 0, 5)));
    const committables = await writer.prepareCommit(1);
    await (await sink.createCommitter(tx(2, 3, 'a1'))).commit(committables);
    const before = statSync(join(dir, 'part-2-0.jsonl'));

    await (await sink.createCommitter(tx(2, 3, 'a1'))).commit(committables);
    const restarted = sinkOf(dir); // as a new process restoring the checkpoint would build it
    await (await restarted.createCommitter(tx(0, 1, 'a2'))).commit(committables);

    const after = statSync(join(dir, 'part-2-0.jsonl'));
    expect([after.ino, after.size, after.mtimeMs]).toEqual([before.ino, before.size, before.mtimeMs]);
    expectVisible(dir, { 'part-2-0.jsonl': text(rows('x', 0, 5)) });
    expect(hidden(dir)).toEqual([]);
  });

  it('survives a crash between pre-commit and commit: the new attempt commits what was prepared, nothing else', async () => {
    const dir = freshDir();
    // Attempt A: one byte of buffer, so its unprepared tail really is on disk when it dies.
    const sinkA = sinkOf(dir, { bufferSizeBytes: 1 });
    const writerA = await sinkA.createWriter(tx(0, 1, 'attemptA'));
    await writerA.write(batch(rows('a', 0, 3)));
    const checkpointed = await writerA.prepareCommit(7); // goes into checkpoint 7, which completes
    expectVisible(dir, {});
    await writerA.write(batch(rows('a', 3, 6)));
    await writerA.prepareCommit(8); // checkpoint 8 never completes
    await writerA.write(batch(rows('a', 6, 9))); // after barrier 8, in no checkpoint at all
    expectVisible(dir, {});
    expect(hidden(dir)).toEqual([
      '.part-0-0.jsonl.e7-a0.pending',
      '.part-0-1.jsonl.e7-a0.pending',
      '.part-0-2.jsonl.e7-a0.inprogress',
    ]);
    expect(readFileSync(join(dir, '.part-0-2.jsonl.e7-a0.inprogress'), 'utf8')).toBe(text(rows('a', 6, 9)));
    // A dies here: no commit, not even close.

    // Attempt B restores checkpoint 7, whose state holds A's first committable.
    const sinkB = sinkOf(dir, { bufferSizeBytes: 1 });
    const ctxB = tx(0, 1, 'attemptB');
    await sinkB.cleanUpDangling(ctxB, checkpointed);
    // The in-progress tail is gone; checkpoint 8's pending file stays for now (it could be another subtask's share).
    expect(hidden(dir)).toEqual(['.part-0-0.jsonl.e7-a0.pending', '.part-0-1.jsonl.e7-a0.pending']);
    expectVisible(dir, {});
    const committerB = await sinkB.createCommitter(ctxB);
    await committerB.commit(checkpointed);
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('a', 0, 3)) });
    expect(hidden(dir)).toEqual(['.part-0-1.jsonl.e7-a0.pending']);

    // B replays from checkpoint 7's source position: everything after a2 comes again, then new data.
    const writerB = await sinkB.createWriter(ctxB);
    await writerB.write(batch(rows('a', 3, 9)));
    await writerB.write(batch(rows('b', 0, 2)));
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('a', 0, 3)) });
    const fromB = await writerB.prepareCommit(8);
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('a', 0, 3)) });
    await committerB.commit(fromB); // B's own checkpoint 8 is complete: A's leftovers are garbage now
    expect(hidden(dir)).toEqual([]);
    await committerB.commit([...checkpointed, ...fromB]); // a later restore replays both: still no change

    const [finalB] = fromB.map((c) => c.finalPath.slice(dir.length + 1));
    expect(finalB).not.toBe('part-0-0.jsonl');
    expectVisible(dir, { 'part-0-0.jsonl': text(rows('a', 0, 3)), [finalB!]: text([...rows('a', 3, 9), ...rows('b', 0, 2)]) });
    expect(Object.values(visible(dir)).join('')).toBe(text([...rows('a', 0, 9), ...rows('b', 0, 2)]));
  });

  it('cleans up leftovers of other attempts of any subtask, concurrently, and never the current attempt or kept files', async () => {
    const dir = freshDir();
    // The old run had parallelism 4; each subtask committed one file, prepared one more (in the restored
    // checkpoint), prepared one that no checkpoint holds (its checkpoint never completed), and had one in progress.
    const old = sinkOf(dir, { bufferSizeBytes: 1 });
    const kept: PartFileCommittable[] = [];
    const oldCommitted: Record<string, string> = {};
    for (let s = 0; s < 4; s++) {
      const w = await old.createWriter(tx(s, 4, 'old'));
      await w.write(batch(rows(`c${s}-`, 0, 2)));
      await (await old.createCommitter(tx(s, 4, 'old'))).commit(await w.prepareCommit(1));
      oldCommitted[`part-${s}-0.jsonl`] = text(rows(`c${s}-`, 0, 2));
      await w.write(batch(rows(`k${s}-`, 0, 2)));
      kept.push(...(await w.prepareCommit(2)));
      await w.write(batch(rows(`u${s}-`, 0, 2)));
      await w.prepareCommit(3);
      await w.write(batch(rows(`t${s}-`, 0, 2)));
    }
    const unkept = hidden(dir).filter((n) => n.endsWith('.pending') && !kept.some((c) => c.pendingPath === join(dir, n)));
    expect(unkept).toHaveLength(4);
    writeFileSync(join(dir, '.part-1-9.jsonl.inprogress'), 'from a sink without attempts in names\n');
    writeFileSync(join(dir, '.other-0-0.jsonl.old.inprogress'), 'another prefix\n');
    writeFileSync(join(dir, '.notes'), 'not ours\n');

    // The new run has parallelism 2 and deals the restored committables round-robin; its writers are already
    // writing when the cleanups run.
    const sink = sinkOf(dir, { bufferSizeBytes: 1 });
    const shares = [kept.filter((_, i) => i % 2 === 0), kept.filter((_, i) => i % 2 === 1)];
    const writers = [await sink.createWriter(tx(0, 2, 'new')), await sink.createWriter(tx(1, 2, 'new'))];
    for (const [s, w] of writers.entries()) await w.write(batch(rows(`n${s}-`, 0, 2)));
    const ours = hidden(dir).filter((n) => n.includes('.e4-a0.'));
    expect(ours).toHaveLength(2);

    // Both subtasks, twice each, all at once, each with its own share only.
    await Promise.all([0, 1, 0, 1].map((s) => sink.cleanUpDangling(tx(s, 2, 'new'), shares[s]!)));

    const keptNames = kept.map((c) => c.pendingPath.slice(dir.length + 1));
    expect(hidden(dir)).toEqual([...keptNames, ...unkept, ...ours, '.notes', '.other-0-0.jsonl.old.inprogress'].sort());
    expectVisible(dir, oldCommitted);

    // Each subtask commits its share; then the first checkpoint of the new attempt completes.
    const committers = [await sink.createCommitter(tx(0, 2, 'new')), await sink.createCommitter(tx(1, 2, 'new'))];
    await committers[0]!.commit(shares[0]!);
    await committers[1]!.commit(shares[1]!);
    expect(hidden(dir)).toEqual([...unkept, ...ours, '.notes', '.other-0-0.jsonl.old.inprogress'].sort());
    const mine = [await writers[0]!.prepareCommit(4), await writers[1]!.prepareCommit(4)];
    await Promise.all([committers[0]!.commit(mine[0]!), committers[1]!.commit(mine[1]!)]);
    expect(hidden(dir)).toEqual(['.notes', '.other-0-0.jsonl.old.inprogress']);

    const contents = Object.values(visible(dir)).sort().join('');
    const expected = [0, 1, 2, 3]
      .flatMap((s) => [text(rows(`c${s}-`, 0, 2)), text(rows(`k${s}-`, 0, 2))])
      .concat([text(rows('n0-', 0, 2)), text(rows('n1-', 0, 2))])
      .sort()
      .join('');
    expect(contents).toBe(expected);
  });

  it('refuses to clean up without the fencing token of the run', async () => {
    const dir = freshDir();
    const sink = sinkOf(dir);
    await expect(sink.cleanUpDangling(tx(0, 1, undefined), [])).rejects.toBeInstanceOf(ConfigError);
  });

  it('cleans up leftovers named with a random attempt id (before fencing tokens) like any other attempt', async () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '.part-0-0.jsonl.0b0e5f1c-3c7d-4a8e-9a51-2f1e0c8d7b6a.inprogress'), 'old run\n');
    const sink = sinkOf(dir);
    await sink.cleanUpDangling(tx(0, 1, 'new'), []);
    expect(hidden(dir)).toEqual([]);
  });

  it('names files with a random attempt per writer when the runtime gives none', async () => {
    const dir = freshDir();
    const sink = sinkOf(dir);
    const first = await sink.createWriter(tx(0, 1, undefined));
    await first.write(batch(['x']));
    const second = await sink.createWriter(tx(0, 1, undefined));
    await second.write(batch(['y']));
    const names = hidden(dir);
    expect(names).toHaveLength(2);
    for (const name of names) expect(name).toMatch(/^\.part-0-\d+\.jsonl\.[0-9a-f]{16}\.inprogress$/);
    expect(names[0]!.split('.')[3]).not.toBe(names[1]!.split('.')[3]);
    await first.close?.();
    await second.close?.();
  });

  it('never reuses a final name: not of a committed file, nor of a pending committable of an earlier run', async () => {
    const dir = freshDir();
    const run1 = sinkOf(dir);
    const w1 = await run1.createWriter(tx(0, 1, 'r1'));
    await w1.write(batch(['one']));
    await (await run1.createCommitter(tx(0, 1, 'r1'))).commit(await w1.prepareCommit(1));
    await w1.write(batch(['two']));
    const pending = await w1.prepareCommit(2); // checkpoint 2 completes, then the run dies before committing
    expect(pending.map((c) => c.finalPath)).toEqual([join(dir, 'part-0-1.jsonl')]);

    const run2 = sinkOf(dir);
    await run2.cleanUpDangling(tx(0, 1, 'r2'), pending);
    const w2 = await run2.createWriter(tx(0, 1, 'r2'));
    await w2.write(batch(['three']));
    const mine = await w2.prepareCommit(3);
    expect(mine.map((c) => c.finalPath)).toEqual([join(dir, 'part-0-2.jsonl')]);
    const committer = await run2.createCommitter(tx(0, 1, 'r2'));
    await committer.commit(pending);
    await committer.commit(mine);
    expectVisible(dir, { 'part-0-0.jsonl': text(['one']), 'part-0-1.jsonl': text(['two']), 'part-0-2.jsonl': text(['three']) });
  });

  it('rolls over within a checkpoint: every rolled file stays hidden and the next prepareCommit returns them all', async () => {
    const dir = freshDir();
    // Each line '"éééé"\n' is 11 bytes: 3 lines (33 bytes) reach the 30-byte roll size.
    const sink = jsonlFileSink<string>({ dir, rollSizeBytes: 30, bufferSizeBytes: 7 });
    const writer = await sink.createWriter(tx(0, 1, 'a1'));
    await writer.write(batch(new Array<string>(7).fill('éééé')));
    expectVisible(dir, {});
    expect(hidden(dir)).toHaveLength(3);

    const prepared = await writer.prepareCommit(1);
    expect(prepared.map((c) => [c.finalPath.slice(dir.length + 1), c.size])).toEqual([
      ['part-0-0.jsonl', 33],
      ['part-0-1.jsonl', 33],
      ['part-0-2.jsonl', 11],
    ]);
    await writer.write(batch(new Array<string>(2).fill('éééé')));
    expectVisible(dir, {});
    const committer = await sink.createCommitter(tx(0, 1, 'a1'));
    await committer.commit(prepared);
    const three = text(new Array<string>(3).fill('éééé'));
    expectVisible(dir, { 'part-0-0.jsonl': three, 'part-0-1.jsonl': three, 'part-0-2.jsonl': text(['éééé']) });

    const next = await writer.prepareCommit(2); // only what came after checkpoint 1
    expect(next.map((c) => [c.finalPath.slice(dir.length + 1), c.size])).toEqual([['part-0-3.jsonl', 22]]);
    await committer.commit(next);
    expect(Object.values(visible(dir)).join('')).toBe(text(new Array<string>(9).fill('éééé')));
  });

  it('renames nothing in finish with checkpoints; without, a roll-over or finish or prepareCommit+commit end the output', async () => {
    const transactionalDir = freshDir();
    const sink = sinkOf(transactionalDir, { rollSizeBytes: 10 });
    const writer = await sink.createWriter(tx(0, 1, 'a1'));
    await writer.write(batch(['first line', 'tail'])); // the first line fills a file and rolls over
    await writer.finish?.();
    await writer.close?.();
    expectVisible(transactionalDir, {});
    expect(hidden(transactionalDir)).toHaveLength(2);

    // Checkpointing off: a roll-over is committed at once, and the end of input goes through prepareCommit + commit.
    const directDir = freshDir();
    const direct = sinkOf(directDir, { rollSizeBytes: 10 });
    const w = await direct.createWriter(tx(0, 1, 'a1', false));
    await w.write(batch(['first line', 'tail']));
    expectVisible(directDir, { 'part-0-0.jsonl': text(['first line']) });
    await (await direct.createCommitter(tx(0, 1, 'a1', false))).commit(await w.prepareCommit(Number.MAX_SAFE_INTEGER));
    await w.finish?.(); // nothing left for it
    await w.close?.();
    expectVisible(directDir, { 'part-0-0.jsonl': text(['first line']), 'part-0-1.jsonl': text(['tail']) });
    expect(hidden(directDir)).toEqual([]);
  });

  it('fails with a typed, non-retriable error when a committable cannot be committed, and never overwrites', async () => {
    const dir = freshDir();
    const sink = sinkOf(dir);
    const committer = await sink.createCommitter(tx(0, 1, 'a1'));
    const commit = async (cs: PartFileCommittable[]): Promise<void> => committer.commit(cs);
    const writer = await sink.createWriter(tx(0, 1, 'a1'));
    const prepare = async (value: string): Promise<PartFileCommittable> => {
      await writer.write(batch([value]));
      const [c] = await writer.prepareCommit(0);
      return c!;
    };

    const lost = await prepare('lost');
    unlinkSync(lost.pendingPath);
    const lostError = await commit([lost]).catch((e: unknown) => e);
    expect(lostError).toBeInstanceOf(PartFileCommitError);
    expect(lostError).toMatchObject({ reason: 'lost', retriable: false, committable: lost });
    expect((lostError as Error).message).toMatch(/data is lost/);
    expect((lostError as Error).message).toContain(lost.finalPath);

    const clash = await prepare('clash');
    writeFileSync(clash.finalPath, 'somebody else\n');
    await expect(commit([clash])).rejects.toMatchObject({ reason: 'conflict', retriable: false });
    expect(readFileSync(clash.finalPath, 'utf8')).toBe('somebody else\n');
    unlinkSync(clash.finalPath);
    await committer.commit([clash]); // the way is clear again: the pending file is intact
    expect(readFileSync(clash.finalPath, 'utf8')).toBe(text(['clash']));

    const replaced = await prepare('replaced');
    await committer.commit([replaced]);
    writeFileSync(replaced.finalPath, 'rewritten by someone\n');
    await expect(commit([replaced])).rejects.toMatchObject({ reason: 'conflict' });

    const grown = await prepare('grown');
    appendFileSync(grown.pendingPath, 'appended after the pre-commit\n');
    await expect(commit([grown])).rejects.toMatchObject({ reason: 'corrupt' });

    const notOurs = { pendingPath: join(dir, 'notes.txt'), finalPath: join(dir, 'part-0-99.jsonl'), size: 0 };
    await expect(commit([notOurs])).rejects.toBeInstanceOf(InternalError);
    await writer.close?.();
  });
});
