import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeGroupKey, encodeGroupKey, groupKeyKeyGroup } from '../../../lib/state/snapshot-format/key-bytes.ts';
import { decodeRow, encodeRow, rowEntryCount } from '../../../lib/state/snapshot-format/row-codec.ts';
import { StoredStateCorruptError } from '../../../lib/state/snapshot-format/state-errors.ts';
import type { StateFileHeader } from '../../../lib/state/snapshot-format/state-file-format.ts';
import { StateFileReader } from '../../../lib/state/snapshot-format/state-file-reader.ts';
import { StateFileWriter } from '../../../lib/state/snapshot-format/state-file-writer.ts';
import { fastTempDir, removeDir } from './rocksdb-test-env.ts';

const header: StateFileHeader = {
  kind: 'changes',
  checkpointId: 7,
  maxParallelism: 128,
  keyGroupRange: { start: 0, end: 63 },
  states: [
    [0, 'v'],
    [3, 'l'],
  ],
};

describe('keyed state files', () => {
  let dir: string;

  beforeAll(() => {
    dir = fastTempDir('sluice-state-files-');
  });

  afterAll(() => {
    removeDir(dir);
  });

  async function readAll(path: string): Promise<{ header: StateFileHeader; rows: [number, unknown, unknown[] | undefined][] }> {
    const reader = await StateFileReader.open(path);
    const rows: [number, unknown, unknown[] | undefined][] = [];
    try {
      for (let block = await reader.next(); block !== undefined; block = await reader.next()) {
        for (let i = 0; i < block.count; i++) {
          const gk = block.groupKeys[i]!;
          const value = block.values[i];
          rows.push([groupKeyKeyGroup(gk), decodeGroupKey(gk), value === undefined ? undefined : decodeRow(value, path)]);
        }
      }
      return { header: reader.header, rows };
    } finally {
      await reader.close();
    }
  }

  it('round-trips rows, tombstones, awkward keys and rows larger than a block', async () => {
    const path = join(dir, 'round-trip');
    const writer = await StateFileWriter.create(path, header);
    const big = 'x'.repeat(600_000);
    const keys = ['a', 1, '1', -0, 1.5e300, 'ünïcödé', '\ud800 lone surrogate', ''];
    for (const [i, key] of keys.entries()) writer.addRow(encodeGroupKey(i, key), encodeRow([0, '', { i }, 3, 7, [i, i]]));
    writer.addRow(encodeGroupKey(60, 'gone'), undefined);
    writer.addRow(encodeGroupKey(61, 'big'), encodeRow([0, 1, big]));
    for (let i = 0; i < 20_000; i++) {
      writer.addRow(encodeGroupKey(i % 64, `k${i}`), encodeRow([0, '', i]));
      if (writer.needsDrain) await writer.drain();
    }
    const bytes = await writer.finish();
    expect(readFileSync(path).length).toBe(bytes);

    const { header: read, rows } = await readAll(path);
    expect(read).toEqual(header);
    expect(rows).toHaveLength(keys.length + 2 + 20_000);
    for (const [i, key] of keys.entries()) expect(rows[i]).toEqual([i, key === -0 ? 0 : key, [0, '', { i }, 3, 7, [i, i]]]);
    expect(Object.is(rows[3]![1], 0)).toBe(true);
    expect(rows[keys.length]).toEqual([60, 'gone', undefined]);
    expect(rows[keys.length + 1]).toEqual([61, 'big', [0, 1, big]]);
    expect(rows.at(-1)).toEqual([19_999 % 64, 'k19999', [0, '', 19_999]]);
  });

  it('counts a row entries from its header without decoding it', () => {
    for (const n of [0, 1, 5, 6, 100, 30_000]) {
      const flat: unknown[] = [];
      for (let i = 0; i < n; i++) flat.push(i, '', i);
      expect(rowEntryCount(encodeRow(flat))).toBe(n);
    }
  });

  it('detects a changed byte, a truncated file, trailing bytes and another format version', async () => {
    const path = join(dir, 'damaged');
    const writer = await StateFileWriter.create(path, header);
    for (let i = 0; i < 1000; i++) writer.addRow(encodeGroupKey(1, `k${i}`), encodeRow([0, '', i]));
    await writer.finish();
    const good = readFileSync(path);

    const flipped = Buffer.from(good);
    flipped[Math.floor(good.length / 2)]! ^= 0x40;
    writeFileSync(path, flipped);
    await expect(readAll(path)).rejects.toThrow(StoredStateCorruptError);

    writeFileSync(path, good.subarray(0, good.length - 7));
    await expect(readAll(path)).rejects.toThrow('truncated');

    writeFileSync(path, Buffer.concat([good, Buffer.from([0])]));
    await expect(readAll(path)).rejects.toThrow('after its footer');

    const newer = Buffer.from(good);
    newer.writeUInt16BE(99, 4);
    writeFileSync(path, newer);
    await expect(readAll(path)).rejects.toThrow('version 99');

    writeFileSync(path, good);
    expect((await readAll(path)).rows).toHaveLength(1000);
  });
});
