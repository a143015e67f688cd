import { appendFileSync, existsSync, linkSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, jsonlAppendSink, type AppendCommittable } from '../../../lib/index.ts';
import { commitAppend } from '../../../lib/connectors/local/append-file-commit.ts';
import { ownerRecordPath, readOwnerRecord, writeOwnerRecord } from '../../../lib/connectors/local/output-owner.ts';
import type { SinkContext, TwoPhaseCommitSinkWriter } from '../../../lib/connectors/sink.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-append-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

// Attempt 'a<n>' runs with epoch n.
const ctx = (attempt: string): SinkContext => ({
  subtask: 0,
  parallelism: 1,
  operatorName: 'late',
  fencing: { attempt: 0, epoch: Number(attempt.slice(1)) },
  checkpointing: true,
});
const batch = (values: unknown[]) => ({ values, timestamps: values.map(() => 0) });

/** One run of the sink as the runtime drives it: restored commit, cleanup, writer; returns the writer and committer. */
async function open(path: string, attempt: string, restored: AppendCommittable[]) {
  const sink = jsonlAppendSink<unknown>({ path, label: '--late-output' });
  const committer = await sink.createCommitter(ctx(attempt));
  await committer.commit(restored);
  await sink.cleanUpDangling(ctx(attempt), restored);
  const writer = (await sink.createWriter(ctx(attempt))) as TwoPhaseCommitSinkWriter<unknown, AppendCommittable>;
  return { writer, committer };
}

const lines = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);

describe('jsonlAppendSink', () => {
  it('appends each checkpoint once; a restore commits the restored segment and replays the rest', async () => {
    const path = join(dir, 'late.jsonl');
    const first = await open(path, 'a1', []);
    await first.writer.write(batch([1, 2]));
    const c1 = await first.writer.prepareCommit(1);
    await first.committer.commit(c1);
    await first.writer.write(batch([3]));
    const c2 = await first.writer.prepareCommit(2); // checkpoint 2 completes, then the process dies before commit
    await first.writer.write(batch([4])); // after checkpoint 2: replayed by the restore
    first.writer.close?.();
    expect(lines(path)).toEqual(['1', '2']);

    const second = await open(path, 'a2', c2);
    expect(lines(path)).toEqual(['1', '2', '3']);
    // A commit replayed again (a second crash) changes nothing.
    await second.committer.commit(c2);
    await second.writer.write(batch([4]));
    await second.committer.commit(await second.writer.prepareCommit(3));
    expect(lines(path)).toEqual(['1', '2', '3', '4']);
    expect(readdirSync(dir).sort()).toEqual(['.late.jsonl.sluice.json', 'late.jsonl']);
  });

  it('a commit replayed after a crash in the middle of an append truncates back and appends once', async () => {
    const path = join(dir, 'late.jsonl');
    const run = await open(path, 'a1', []);
    await run.writer.write(batch([1]));
    await run.committer.commit(await run.writer.prepareCommit(1));
    await run.writer.write(batch(['x', 'y']));
    const [c] = await run.writer.prepareCommit(2);
    // What a crash half-way through commitAppend leaves: the journal names the segment and part of it is appended.
    writeOwnerRecord(path, { kind: 'appended', owner: c!.owner, appending: { segment: '.late.jsonl.e1-a0-1.pending', offset: 2 } });
    appendFileSync(path, '"x"\n"');
    commitAppend(c!);
    expect(lines(path)).toEqual(['1', '"x"', '"y"']);
  });

  it('refuses a file it does not own, before and at the start, and leaves it alone', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'precious\n');
    expect(() => jsonlAppendSink({ path, label: '--late-output' })).toThrow(ConfigError);
    expect(() => jsonlAppendSink({ path, label: '--late-output' })).toThrow(/--late-output .*notes\.txt already exists and it was not written by this job/);

    // The output of an earlier run: refused unless this run continues that run's checkpoints.
    const late = join(dir, 'late.jsonl');
    const first = await open(late, 'a1', []);
    await first.writer.write(batch([1]));
    const c1 = await first.writer.prepareCommit(1);
    await first.committer.commit(c1);
    await expect(open(late, 'a2', [])).rejects.toThrow(/output of an earlier run/);
    await expect(open(late, 'a3', [{ ...c1[0]!, owner: 'someone-else' }])).rejects.toThrow(/output of another job/);
    await open(late, 'a4', c1);
    expect(lines(late)).toEqual(['1']);
    expect(readFileSync(path, 'utf8')).toBe('precious\n');
  });

  it('refuses a directory, the input, or a file inside an input directory', () => {
    writeFileSync(join(dir, 'in.jsonl'), '{}\n');
    expect(() => jsonlAppendSink({ path: dir, label: '--late-output' })).toThrow(/is a directory/);
    expect(() => jsonlAppendSink({ path: join(dir, 'in.jsonl'), label: '--late-output', inputs: [join(dir, 'in.jsonl')] })).toThrow(/is the job's input/);
    expect(() => jsonlAppendSink({ path: join(dir, 'late.jsonl'), label: '--late-output', inputs: [dir] })).toThrow(/inside the job's input directory/);
    expect(() => jsonlAppendSink({ path: join(dir, '..late.jsonl'), label: '--late-output', inputs: [dir] })).toThrow(/inside the job's input directory/);
    linkSync(join(dir, 'in.jsonl'), join(dir, 'hard-link.jsonl'));
    expect(() => jsonlAppendSink({ path: join(dir, 'hard-link.jsonl'), label: '--late-output', inputs: [join(dir, 'in.jsonl')] })).toThrow(/is the job's input/);
    expect(readFileSync(join(dir, 'in.jsonl'), 'utf8')).toBe('{}\n');
  });

  it('refuses to continue a checkpoint that writes another file', async () => {
    const first = await open(join(dir, 'late.jsonl'), 'a1', []);
    await first.writer.write(batch([1]));
    const c1 = await first.writer.prepareCommit(1);
    await expect(open(join(dir, 'other.jsonl'), 'a2', c1)).rejects.toThrow(ConfigError);
    await expect(open(join(dir, 'other.jsonl'), 'a2', c1)).rejects.toThrow(/restored checkpoint writes to .*late\.jsonl, this run to .*other\.jsonl/);
  });

  it('keeps the owner record beside the file', async () => {
    const path = join(dir, 'late.jsonl');
    const run = await open(path, 'a1', []);
    const prepared = await run.writer.prepareCommit(1);
    await run.committer.commit(prepared);
    expect(existsSync(ownerRecordPath(path))).toBe(true);
    // The owner is the job's, not the attempt's: a later attempt continues under it.
    expect(readOwnerRecord<{ owner: string }>(path)?.owner).toBe(prepared[0]!.owner);
    expect(prepared[0]!.owner).not.toContain('e1-a0');
    expect(lines(path)).toEqual([]);
  });
});
