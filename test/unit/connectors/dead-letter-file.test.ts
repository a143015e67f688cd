import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterFile } from '../../../lib/connectors/local/dead-letter-file.ts';
import { jsonlFileSource } from '../../../lib/connectors/local/index.ts';
import { readerContext } from './drain-source.ts';

let dir: string;
let input: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-dead-'));
  input = join(dir, 'in.jsonl');
  writeFileSync(input, 'x\n');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const letter = (offset: number) => ({ file: input, line: offset + 1, offset, error: 'bad', raw: `raw ${offset}` });
const lines = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);

describe('DeadLetterFile', () => {
  it('writes each input line once, also across a rerun that reads lines again', () => {
    const path = join(dir, 'dead.jsonl');
    const first = new DeadLetterFile(path, { input, label: '--dead-letter' });
    first.append(letter(10));
    first.append(letter(20));
    first.append(letter(10));
    first.sync();
    first.close();
    const rerun = new DeadLetterFile(path, { input, label: '--dead-letter' });
    rerun.append(letter(20));
    rerun.append(letter(30));
    rerun.close();
    expect(lines(path).map((l) => (JSON.parse(l) as { offset: number }).offset)).toEqual([10, 20, 30]);
  });

  it('refuses an existing file that is not the dead-letter file of the same input', () => {
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'precious\n');
    expect(() => new DeadLetterFile(notes, { input, label: '--dead-letter' })).toThrow(/--dead-letter .*notes\.txt already exists and it was not written/);
    const path = join(dir, 'dead.jsonl');
    const other = join(dir, 'other.jsonl');
    writeFileSync(other, 'y\n');
    const file = new DeadLetterFile(path, { input: other });
    file.append(letter(1));
    file.close();
    expect(() => new DeadLetterFile(path, { input, label: '--dead-letter' })).toThrow(/holds the dead letters of/);
    expect(readFileSync(notes, 'utf8')).toBe('precious\n');
  });

  it('refuses the input itself and a directory', () => {
    expect(() => new DeadLetterFile(input, { input, label: '--dead-letter' })).toThrow(/is the job's input/);
    expect(() => new DeadLetterFile(dir, { input: join(dir, 'x.jsonl'), label: '--dead-letter' })).toThrow(/is a directory/);
    expect(readFileSync(input, 'utf8')).toBe('x\n');
  });
});

describe('JSONL source: a record rejected after the read goes to the dead letters in one call', () => {
  it('writes the line at the record\'s offset with the reason, or says there is no dead-letter file', async () => {
    const text = '{"ts":1}\r\n{"ts":1e300}\n\n{"ts":3}\n';
    writeFileSync(input, text);
    const deadLetterPath = join(dir, 'dead.jsonl');
    const source = jsonlFileSource<{ ts: number }>({ path: input, deadLetterPath, deadLetterLabel: '--dead-letter' });
    const reader = source.createReader(await source.createSplits({ parallelism: 1 }), readerContext(0, 1));
    // The runtime rejects a record right after the poll that returned it, before the next one.
    const polled = await reader.poll(100);
    if (polled.kind !== 'batch') throw new Error(`expected a batch, got ${polled.kind}`);
    const badIndex = polled.batch.values.findIndex((v) => v.ts === 1e300);
    const bad = { split: polled.batch.split, offset: polled.batch.offsets![badIndex] as number };
    expect(reader.rejectRecord(bad.split, bad.offset, 'timestamp out of range')).toBe(true);
    reader.close();
    expect(lines(deadLetterPath).map((l) => JSON.parse(l) as unknown)).toEqual([
      { file: input, line: 2, offset: text.indexOf('{"ts":1e300}'), error: 'timestamp out of range', raw: '{"ts":1e300}' },
    ]);
    expect(reader.counters.deadLetters).toBe(1);

    const without = jsonlFileSource<{ ts: number }>({ path: input });
    const plain = without.createReader(await without.createSplits({ parallelism: 1 }), readerContext(0, 1));
    await plain.poll(100);
    expect(plain.rejectRecord(bad.split, bad.offset, 'timestamp out of range')).toBe(false);
    plain.close();
  });
});
