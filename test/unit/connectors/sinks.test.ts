import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, NonFiniteNumberError, batchOf } from '../../../lib/core/index.ts';
import { collectSink, jsonlFileSink, printSink } from '../../../lib/connectors/local/index.ts';
import type { SinkContext } from '../../../lib/connectors/sink.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-sinks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, `out-${dirCounter++}`);

function ctx(subtask: number, parallelism: number): SinkContext {
  return { subtask, parallelism, operatorName: 'sink' };
}

describe('printSink', () => {
  it('prints one line per record, with the 1-based subtask prefix only when parallelism > 1', async () => {
    const lines: string[] = [];
    const sink = printSink<{ a: number }>({ target: (line) => lines.push(line) });
    const single = await sink.createWriter(ctx(0, 1));
    await single.write(batchOf([{ a: 1 }, { a: 2 }], [0, 0]));
    const third = await sink.createWriter(ctx(2, 4));
    await third.write(batchOf([{ a: 3 }], [0]));
    expect(lines).toEqual(['{"a":1}', '{"a":2}', '3> {"a":3}']);
  });

  it('uses the formatter and identifier, and writes a stream once per batch', async () => {
    const chunks: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    const sink = printSink<number>({ target: stream, identifier: 'sums', format: (v, ts) => `${v}@${ts}` });
    await (await sink.createWriter(ctx(1, 2))).write(batchOf([10, 20], [100, 200]));
    await (await sink.createWriter(ctx(0, 1))).write(batchOf([30], [300]));
    expect(chunks).toEqual(['sums:2> 10@100\nsums:2> 20@200\n', 'sums> 30@300\n']);
  });

  it('waits for drain when the stream is full (backpressure)', async () => {
    let release: (() => void) | undefined;
    const stream = new Writable({
      highWaterMark: 4,
      write(_chunk, _enc, done) {
        release = done;
      },
    });
    const writer = await printSink<string>({ target: stream }).createWriter(ctx(0, 1));
    const pending = writer.write(batchOf(['a long line that fills the buffer'], [0]));
    expect(pending).toBeInstanceOf(Promise);
    let resolved = false;
    void (pending as Promise<void>).then(() => (resolved = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(resolved).toBe(false);
    release?.();
    await pending;
    expect(resolved).toBe(true);
  });
});

describe('jsonlFileSink', () => {
  // Without checkpoints: roll-overs and finish make files visible at once (two-phase commit: jsonl-file-sink-2pc.test.ts).
  const direct = (subtask: number, parallelism: number): SinkContext => ({ ...ctx(subtask, parallelism), checkpointing: false, fencing: { attempt: 0, epoch: 1 } });
  it('writes an in-progress hidden file and renames it to part-<subtask>-<n>.jsonl on finish', async () => {
    const dir = freshDir();
    const sink = jsonlFileSink<{ n: number }>({ dir });
    const writer = await sink.createWriter(direct(3, 4));
    await writer.write(batchOf([{ n: 1 }, { n: 2 }], [0, 0]));
    expect(readdirSync(dir)).toEqual(['.part-3-0.jsonl.e1-a0.inprogress']);
    await writer.finish?.();
    await writer.close?.();
    expect(readdirSync(dir)).toEqual(['part-3-0.jsonl']);
    expect(readFileSync(join(dir, 'part-3-0.jsonl'), 'utf8')).toBe('{"n":1}\n{"n":2}\n');
  });

  it('rolls over at rollSizeBytes counting UTF-8 bytes, and creates no empty part', async () => {
    const dir = freshDir();
    // Each line '"éééé"\n' is 7 characters but 11 bytes: counting characters would put 5 lines in a part.
    const sink = jsonlFileSink<string>({ dir, rollSizeBytes: 30, bufferSizeBytes: 7 });
    const writer = await sink.createWriter(direct(0, 1));
    await writer.write(batchOf(Array.from({ length: 7 }, () => 'éééé'), new Array(7).fill(0)));
    // 3 lines = 33 bytes >= 30: parts 0 and 1 are committed at the roll, part 2 holds the 7th line.
    expect(readdirSync(dir).sort()).toEqual(['.part-0-2.jsonl.e1-a0.inprogress', 'part-0-0.jsonl', 'part-0-1.jsonl']);
    for (const name of ['part-0-0.jsonl', 'part-0-1.jsonl']) {
      expect(readFileSync(join(dir, name), 'utf8')).toBe('"éééé"\n'.repeat(3));
    }
    await writer.finish?.();
    expect(readFileSync(join(dir, 'part-0-2.jsonl'), 'utf8')).toBe('"éééé"\n');
    const empty = await sink.createWriter(direct(1, 2));
    await empty.finish?.();
    expect(readdirSync(dir).filter((n) => n.startsWith('part-1'))).toEqual([]);
  });

  it('continues numbering past files of an earlier run and leaves the in-progress file on failure', async () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'part-0-0.jsonl'), 'old\n');
    writeFileSync(join(dir, 'part-0-4.jsonl'), 'old\n');
    writeFileSync(join(dir, '.part-0-5.jsonl.inprogress'), 'stale\n');
    writeFileSync(join(dir, 'part-1-9.jsonl'), 'other subtask\n');
    const sink = jsonlFileSink<number>({ dir, format: (v) => `v=${v}` });
    const failing = await sink.createWriter(direct(0, 2));
    await failing.write(batchOf([1, 2], [0, 0]));
    await failing.close?.(); // no finish: a failure
    expect(existsSync(join(dir, '.part-0-6.jsonl.e1-a0.inprogress'))).toBe(true);
    expect(existsSync(join(dir, 'part-0-6.jsonl'))).toBe(false);
    expect(readFileSync(join(dir, 'part-0-4.jsonl'), 'utf8')).toBe('old\n');
    const next = await sink.createWriter(direct(0, 2));
    await next.write(batchOf([3], [0]));
    await next.finish?.();
    await next.close?.();
    expect(readFileSync(join(dir, 'part-0-7.jsonl'), 'utf8')).toBe('v=3\n');
    const other = await sink.createWriter(direct(1, 2));
    await other.write(batchOf([4], [0]));
    await other.finish?.();
    expect(readFileSync(join(dir, 'part-1-10.jsonl'), 'utf8')).toBe('v=4\n');
  });

  it('validates its options', () => {
    expect(() => jsonlFileSink({ dir: '' })).toThrow(ConfigError);
    expect(() => jsonlFileSink({ dir: freshDir(), rollSizeBytes: 0 })).toThrow(ConfigError);
    expect(() => jsonlFileSink({ dir: freshDir(), prefix: '../x' })).toThrow(ConfigError);
  });
});

describe('collectSink', () => {
  it('gathers values and timestamps from all writers and counts finished ones', async () => {
    const sink = collectSink<string>();
    const a = await sink.createWriter(ctx(0, 2));
    const b = await sink.createWriter(ctx(1, 2));
    await a.write(batchOf(['x', 'y'], [1, 2]));
    await b.write(batchOf(['z'], [3]));
    await a.finish?.();
    expect(sink.values).toEqual(['x', 'y', 'z']);
    expect(sink.timestamps).toEqual([1, 2, 3]);
    expect(sink.finishedWriters).toBe(1);
    sink.clear();
    expect(sink.values).toEqual([]);
    expect(sink.finishedWriters).toBe(0);
  });
});

describe('numbers JSON cannot hold (NaN, Infinity)', () => {
  const sum = { account: 'a-1', totals: [{ cents: 5 }, { cents: Number.POSITIVE_INFINITY }], note: null };

  it('the JSONL file sink refuses them naming the operator and the field, instead of writing null', async () => {
    const dir = freshDir();
    const writer = await jsonlFileSink<unknown>({ dir }).createWriter({ ...ctx(0, 1), operatorName: 'window totals', fencing: { attempt: 0, epoch: 1 }, checkpointing: false });
    let failure: unknown;
    try {
      await writer.write(batchOf([{ account: 'ok', cents: 1, note: null }, sum], [0, 0]));
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(NonFiniteNumberError);
    expect((failure as NonFiniteNumberError).path).toBe('$.totals[1].cents');
    expect((failure as Error).message).toMatch(/^sink "window totals": field \$\.totals\[1\]\.cents is Infinity, which it cannot write as a number/);
    for (const [value, path] of [
      [Number.NaN, '$'],
      [{ 'odd key': [Number.NEGATIVE_INFINITY] }, '$["odd key"][0]'],
      [{ at: { toJSON: () => ({ n: Number.NaN }) } }, '$.at.n'],
    ] as const) {
      expect(() => writer.write(batchOf([value], [0]))).toThrow(expect.objectContaining({ path }) as Error);
    }
  });

  it('nulls that are nulls are written as they are', async () => {
    const dir = freshDir();
    const sink = jsonlFileSink<unknown>({ dir });
    const writer = await sink.createWriter({ ...ctx(0, 1), fencing: { attempt: 0, epoch: 1 }, checkpointing: false });
    await writer.write(batchOf([{ a: null, b: [null, 1], nullish: 'null' }], [0]));
    await writer.finish?.();
    const files = readdirSync(dir).filter((f) => !f.startsWith('.'));
    expect(files.map((f) => readFileSync(join(dir, f), 'utf8'))).toEqual(['{"a":null,"b":[null,1],"nullish":"null"}\n']);
  });

  it('the print sink refuses them inside records; a bare number prints as itself', async () => {
    const lines: string[] = [];
    const writer = await printSink<unknown>({ target: (line) => lines.push(line) }).createWriter({ ...ctx(0, 1), operatorName: 'show' });
    await writer.write(batchOf([Number.NaN, 1.5, { a: null }], [0, 0, 0]));
    expect(lines).toEqual(['NaN', '1.5', '{"a":null}']);
    expect(() => writer.write(batchOf([sum], [0]))).toThrow(/sink "show": field \$\.totals\[1\]\.cents is Infinity/);
  });
});
