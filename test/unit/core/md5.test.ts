import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { md5 } from '../../../lib/core/md5.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('md5 (plain JavaScript, UTF-8)', () => {
  it('equals node:crypto on known vectors, multi-byte text and every length around the block boundaries', () => {
    expect(hex(md5(''))).toBe('d41d8cd98f00b204e9800998ecf8427e');
    expect(hex(md5('The quick brown fox jumps over the lazy dog'))).toBe('9e107d9d372bb6826bd81d3542a419d6');
    const texts = ['ключ-1', '😀 emoji', 'mixed ascii é and 中文', '\u0000nul'];
    for (let n = 0; n <= 200; n++) texts.push('k'.repeat(n), 'é'.repeat(n));
    for (const t of texts) expect(hex(md5(t)), JSON.stringify(t)).toBe(createHash('md5').update(t, 'utf8').digest('hex'));
  });

  it('encodes a lone surrogate as node does (U+FFFD)', () => {
    expect(hex(md5('a\ud800b'))).toBe(createHash('md5').update('a\ud800b', 'utf8').digest('hex'));
  });
});
