import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, ManualClock, NO_TIMESTAMP } from '../../../lib/core/index.ts';
import { jsonlFileSource } from '../../../lib/connectors/local/index.ts';
import type { JsonlFileSplit } from '../../../lib/connectors/local/index.ts';
import { drainReader, readAll, readerContext } from './drain-source.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-jsonl-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let fileCounter = 0;
function tempPath(name = 'in.jsonl'): string {
  const dir = join(root, String(fileCounter++));
  mkdirSync(dir);
  return join(dir, name);
}

interface Line {
  /** undefined: a blank line */
  record: { i: number; s: string } | undefined;
  blank: string;
  crlf: boolean;
}

/** File text for `lines`, and the expected records with the byte offsets of their lines. */
function render(lines: Line[], trailingNewline: boolean): { text: string; expected: { value: unknown; offset: number }[] } {
  let text = '';
  const expected: { value: unknown; offset: number }[] = [];
  lines.forEach((line, idx) => {
    const offset = Buffer.byteLength(text);
    if (line.record === undefined) text += line.blank;
    else {
      text += JSON.stringify(line.record);
      expected.push({ value: line.record, offset });
    }
    const last = idx === lines.length - 1;
    if (!last || trailingNewline) text += line.crlf ? '\r\n' : '\n';
  });
  return { text, expected };
}

const lineArb = fc.record({
  record: fc.option(
    fc.record({
      i: fc.integer(),
      s: fc.oneof(fc.string({ maxLength: 10 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ minLength: 60, maxLength: 300 })),
    }),
    { nil: undefined, freq: 5 },
  ),
  blank: fc.constantFrom('', ' ', '\t', '  '),
  crlf: fc.boolean(),
});

describe('jsonlFileSource splits', () => {
  it('reads every line exactly once at any split count (CRLF, unicode, long lines, no trailing newline)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineArb, { maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 64 }),
        async (lines, trailingNewline, parallelism, splitSizeBytes, readChunkBytes) => {
          const { text, expected } = render(lines, trailingNewline);
          if (text.length === 0) return;
          const path = tempPath();
          writeFileSync(path, text);
          const source = jsonlFileSource({ path, splitSizeBytes, readChunkBytes });
          const got = await readAll(source, parallelism, 5);
          got.sort((a, b) => a.offset - b.offset);
          expect(got.map((r) => ({ value: r.value, offset: r.offset }))).toEqual(expected);
          expect(got.every((r) => r.timestamp === NO_TIMESTAMP)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('splits a bounded file into max(parallelism, ceil(size / splitSize)) byte ranges', async () => {
    const path = tempPath();
    writeFileSync(path, '{"a":1}\n'.repeat(1000)); // 8000 bytes
    const bySize = await jsonlFileSource({ path, splitSizeBytes: 1000 }).createSplits({ parallelism: 3 });
    expect(bySize).toHaveLength(8);
    const byParallelism = await jsonlFileSource({ path, splitSizeBytes: 1 << 20 }).createSplits({ parallelism: 5 });
    expect(byParallelism).toHaveLength(5);
    expect(byParallelism[0]).toMatchObject({ path, start: 0 });
    expect(byParallelism.at(-1)?.end).toBe(8000);
    for (let i = 1; i < byParallelism.length; i++) expect(byParallelism[i]?.start).toBe(byParallelism[i - 1]?.end);
    expect(new Set(byParallelism.map((s) => s.id)).size).toBe(5);
    expect(structuredClone(byParallelism)).toEqual(byParallelism);
  });

  it('each batch holds records of one split with file offsets, and a split starting on a line start keeps that line', async () => {
    const path = tempPath();
    writeFileSync(path, '{"n":0}\n{"n":1}\n{"n":2}\n{"n":3}\n');
    // Splits cut exactly at line starts (8 bytes per line).
    const source = jsonlFileSource({ path, splitSizeBytes: 8 });
    const splits = await source.createSplits({ parallelism: 1 });
    expect(splits.map((s) => [s.start, s.end])).toEqual([[0, 8], [8, 16], [16, 24], [24, 32]]);
    const reader = source.createReader(splits, readerContext(0, 1));
    const batches = [];
    for (let r = await reader.poll(100); r.kind === 'batch'; r = await reader.poll(100)) batches.push(r.batch);
    expect(batches.map((b) => [b.split, b.values, b.offsets])).toEqual([
      [`${path}#0`, [{ n: 0 }], [0]],
      [`${path}#1`, [{ n: 1 }], [8]],
      [`${path}#2`, [{ n: 2 }], [16]],
      [`${path}#3`, [{ n: 3 }], [24]],
    ]);
  });

  it('reads a directory: all *.jsonl files sorted by name, other and hidden files ignored', async () => {
    const dir = join(root, `dir-${fileCounter++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'b.jsonl'), '{"f":"b"}\n');
    writeFileSync(join(dir, 'a.jsonl'), '{"f":"a"}\n{"f":"a2"}\n');
    writeFileSync(join(dir, 'c.txt'), '{"f":"c"}\n');
    writeFileSync(join(dir, '.part-0-0.jsonl.inprogress'), '{"f":"hidden"}\n');
    writeFileSync(join(dir, '.hidden.jsonl'), '{"f":"hidden"}\n');
    const got = await readAll(jsonlFileSource({ path: dir }), 1);
    expect(got.map((r) => r.value)).toEqual([{ f: 'a' }, { f: 'a2' }, { f: 'b' }]);
    const withParallelism = await readAll(jsonlFileSource({ path: dir, splitSizeBytes: 4 }), 3);
    expect(withParallelism.map((r) => r.value).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))).toEqual([
      { f: 'a' },
      { f: 'a2' },
      { f: 'b' },
    ]);
  });

  it('a missing input is a ConfigError naming the path', async () => {
    const path = join(root, 'no-such-file.jsonl');
    const source = jsonlFileSource({ path });
    await expect(source.createSplits({ parallelism: 1 })).rejects.toThrow(ConfigError);
    await expect(source.createSplits({ parallelism: 1 })).rejects.toThrow(path);
    const dir = join(root, `empty-${fileCounter++}`);
    mkdirSync(dir);
    await expect(jsonlFileSource({ path: dir }).createSplits({ parallelism: 1 })).rejects.toThrow(ConfigError);
    expect(() => jsonlFileSource({ path: dir, splitSizeBytes: 0 })).toThrow(ConfigError);
  });

  it('resumes from currentSplits positions: nothing lost, nothing read twice', async () => {
    const path = tempPath();
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, pad: 'é'.repeat(i % 7) }));
    writeFileSync(path, lines.join('\n') + '\n');
    const source = jsonlFileSource({ path, splitSizeBytes: 900, readChunkBytes: 128 });
    const splits = await source.createSplits({ parallelism: 2 });
    const mine = splits.filter((_, i) => i % 2 === 0);
    const first = source.createReader(mine, readerContext(0, 2));
    const seen: number[] = [];
    for (let k = 0; k < 5; k++) {
      const r = await first.poll(3);
      if (r.kind === 'batch') seen.push(...r.batch.values.map((v) => (v as { i: number }).i));
    }
    const checkpoint = structuredClone(first.currentSplits());
    await first.close();
    const second = source.createReader(checkpoint, readerContext(0, 2));
    seen.push(...(await drainReader(second)).map((r) => (r.value as { i: number }).i));
    const expected = await readAll(jsonlFileSource({ path, splitSizeBytes: 900 }), 2);
    const expectedMine = expected.filter((r) => r.subtask === 0).map((r) => (r.value as { i: number }).i);
    expect(seen).toEqual(expectedMine);
  });
});

describe('jsonlFileSource dead letters', () => {
  function fileWithBadLines(): { path: string; bad: { line: number; offset: number; raw: string }[]; good: number } {
    const path = tempPath();
    const rows: string[] = [];
    const bad: { line: number; offset: number; raw: string }[] = [];
    let offset = 0;
    let good = 0;
    for (let i = 0; i < 300; i++) {
      let row: string;
      if (i % 37 === 5) {
        row = `{"broken": ${i}`;
        bad.push({ line: i + 1, offset, raw: row });
      } else if (i % 41 === 7) {
        row = '';
      } else {
        row = JSON.stringify({ i, text: i % 3 === 0 ? 'ünïcödé ✓' : 'x' });
        good++;
      }
      rows.push(row);
      offset += Buffer.byteLength(row) + (i % 2 === 0 ? 2 : 1);
    }
    writeFileSync(path, rows.map((r, i) => r + (i % 2 === 0 ? '\r\n' : '\n')).join(''));
    return { path, bad, good };
  }

  it('writes malformed lines with correct line numbers from every split, and the job goes on', async () => {
    const { path, bad, good } = fileWithBadLines();
    for (const parallelism of [1, 3, 8]) {
      const deadLetterPath = join(root, `dead-${fileCounter++}`, 'dead.jsonl');
      const source = jsonlFileSource({ path, deadLetterPath, splitSizeBytes: 700, readChunkBytes: 256 });
      const got = await readAll(source, parallelism);
      expect(got).toHaveLength(good);
      const letters = readFileSync(deadLetterPath, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { file: string; line: number; offset: number; error: string; raw: string });
      letters.sort((a, b) => a.offset - b.offset);
      expect(letters.map(({ line, offset, raw }) => ({ line, offset, raw }))).toEqual(bad);
      for (const letter of letters) {
        expect(letter.file).toBe(path);
        expect(letter.error.length).toBeGreaterThan(0);
        expect(Object.keys(letter)).toEqual(['file', 'line', 'offset', 'error', 'raw']);
      }
    }
  });

  it('rejects records the parse function throws on; counters count records and dead letters', async () => {
    const path = tempPath();
    writeFileSync(path, '{"v":1}\n{"v":-2}\n\n   \nnot json\n{"v":3}');
    const deadLetterPath = join(root, `dead-${fileCounter++}.jsonl`);
    const source = jsonlFileSource<number>({
      path,
      deadLetterPath,
      parse: (raw) => {
        const v = (raw as { v: number }).v;
        if (v < 0) throw new Error(`negative v ${v}`);
        return v * 10;
      },
    });
    const [split] = await source.createSplits({ parallelism: 1 });
    const reader = source.createReader([split as JsonlFileSplit], readerContext(0, 1));
    const got = await drainReader(reader);
    expect(got.map((r) => r.value)).toEqual([10, 30]);
    expect(got.map((r) => r.offset)).toEqual([0, 31]);
    expect(reader.counters.recordsRead).toBe(2);
    expect(reader.counters.deadLetters).toBe(2);
    await reader.close();
    const letters = readFileSync(deadLetterPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(letters).toMatchObject([
      { line: 2, offset: 8, error: 'negative v -2', raw: '{"v":-2}' },
      { line: 5, offset: 22, raw: 'not json' },
    ]);
  });

  it('without a dead-letter file, malformed lines are counted and logged once per split', async () => {
    const { path, bad, good } = fileWithBadLines();
    const writes: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    try {
      const got = await readAll(jsonlFileSource({ path, splitSizeBytes: 1000 }), 1);
      expect(got).toHaveLength(good);
    } finally {
      spy.mockRestore();
    }
    const logged = writes.filter((w) => w.includes('malformed'));
    const counts = logged.map((w) => Number(/skipped (\d+) malformed/.exec(w)?.[1]));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(bad.length);
    const splitIds = logged.map((w) => /in split (\S+)/.exec(w)?.[1]);
    expect(new Set(splitIds).size).toBe(logged.length);
  });
});

describe('jsonlFileSource follow mode', () => {
  it('reads appended lines, holds a partial last line, and ends after the idle timeout', async () => {
    const path = tempPath();
    writeFileSync(path, '{"n":1}\n{"n":2}\n');
    const clock = new ManualClock(1000);
    const source = jsonlFileSource({ path, follow: { pollIntervalMs: 50, idleTimeoutMs: 500 } });
    expect(source.bounded).toBe(true);
    const splits = await source.createSplits({ parallelism: 1 });
    expect(splits).toEqual([{ id: path, path, start: 0, end: null, line: 1 }]);
    const reader = source.createReader(splits, readerContext(0, 1, clock));
    const values = async (): Promise<unknown> => {
      const r = await reader.poll(100);
      return r.kind === 'batch' ? r.batch.values : r;
    };
    expect(await values()).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await values()).toEqual({ kind: 'wait', retryAfterMs: 50 });
    appendFileSync(path, '{"n":3}\n{"n":');
    clock.advance(400);
    expect(await values()).toEqual([{ n: 3 }]);
    expect(await values()).toEqual({ kind: 'wait', retryAfterMs: 50 });
    clock.advance(400); // growth was 400 ms ago: not idle yet
    expect(await values()).toEqual({ kind: 'wait', retryAfterMs: 50 });
    appendFileSync(path, '4}\n{"n":5}');
    expect(await values()).toEqual([{ n: 4 }]);
    expect(reader.currentSplits()).toEqual([{ id: path, path, start: 32, end: null, line: 5 }]);
    clock.advance(499);
    expect(await values()).toEqual({ kind: 'wait', retryAfterMs: 50 });
    clock.advance(1);
    // Idle: the last line without a newline is complete after all.
    expect(await values()).toEqual([{ n: 5 }]);
    expect(await values()).toEqual({ kind: 'end' });
    await reader.close();
  });

  it('follows forever without an idle timeout (unbounded) and rotates among files', async () => {
    const dir = join(root, `follow-dir-${fileCounter++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.jsonl'), '{"f":"a"}\n'.repeat(10));
    writeFileSync(join(dir, 'b.jsonl'), '');
    const clock = new ManualClock(0);
    const source = jsonlFileSource({ path: dir, follow: {} });
    expect(source.bounded).toBe(false);
    const splits = await source.createSplits({ parallelism: 4 });
    expect(splits).toHaveLength(2);
    const reader = source.createReader(splits, readerContext(0, 1, clock));
    const first = await reader.poll(4);
    expect(first.kind === 'batch' && first.batch.values.length).toBe(4);
    appendFileSync(join(dir, 'b.jsonl'), '{"f":"b"}\n');
    const second = await reader.poll(4);
    expect(second.kind === 'batch' && second.batch.split).toBe(join(dir, 'b.jsonl'));
    let rest = 0;
    for (let r = await reader.poll(4); r.kind === 'batch'; r = await reader.poll(4)) rest += r.batch.values.length;
    expect(rest).toBe(6);
    clock.advance(10 * 60_000);
    expect(await reader.poll(4)).toEqual({ kind: 'wait', retryAfterMs: 200 });
    expect(reader.caughtUp!(join(dir, 'a.jsonl'))).toBe(true);
    await reader.close();
  });
});

describe('jsonlFileSource: which splits have no data available', () => {
  it('for idleness, a split not opened yet or paused by alignment is never caught up', async () => {
    const path = tempPath();
    writeFileSync(path, '{"n":1}\n'.repeat(400));
    const source = jsonlFileSource({ path, splitSizeBytes: 1024 });
    const splits = await source.createSplits({ parallelism: 1 });
    expect(splits.length).toBeGreaterThan(1);
    const reader = source.createReader(splits, readerContext(0, 1));
    const first = await reader.poll(10);
    if (first.kind !== 'batch') throw new Error(`expected a batch, got ${first.kind}`);
    reader.pauseOrResumeSplits!([first.batch.split], []);
    // Bounded mode reads one split at a time: with the open one paused the reader waits, the others unopened.
    const waiting = await reader.poll(10);
    expect(waiting).toEqual({ kind: 'wait', retryAfterMs: 0 });
    for (const split of splits) expect(reader.caughtUp!(split.id), split.id).toBe(false);
    await reader.close();
  });
});
