import { InternalError } from '../../core/index.ts';
import type { RocksCursor } from './binding.ts';

const CHUNK_ROWS = 1024;

/** One layer of the view: a cursor whose keys are `strip` prefix bytes followed by a group key. */
export interface ViewLayer {
  readonly cursor: RocksCursor;
  readonly strip: number;
}

class LayerReader {
  private rows: Buffer[] = [];
  private at = 0;
  done = false;

  constructor(
    private readonly layer: ViewLayer,
    private readonly chunkRows: number,
  ) {
    this.fill();
  }

  get strip(): number {
    return this.layer.strip;
  }

  /** Full stored key of the current row (group key from `strip`). */
  key(): Buffer {
    return this.rows[this.at] as Buffer;
  }

  value(): Buffer {
    return this.rows[this.at + 1] as Buffer;
  }

  advance(): void {
    this.at += 2;
    if (this.at >= this.rows.length) this.fill();
  }

  close(): void {
    this.layer.cursor.close();
  }

  private fill(): void {
    this.rows = this.layer.cursor.next(this.chunkRows);
    this.at = 0;
    if (this.rows.length === 0) this.done = true;
  }
}

/**
 * Several layers of rows read as one, in group-key order: where layers hold the same key, the last (newest) layer
 * wins. Each layer's cursor reads a point-in-time view, so the merge is consistent when all cursors were opened
 * together. An empty value is a tombstone (the key has no state); callers decide whether to keep them.
 */
export class MergedView {
  private readonly readers: LayerReader[];
  private cancelled = false;
  groupKey: Buffer = Buffer.alloc(0);
  value: Buffer = Buffer.alloc(0);

  constructor(layers: readonly ViewLayer[], chunkRows = CHUNK_ROWS) {
    this.readers = layers.map((l) => new LayerReader(l, chunkRows));
  }

  /** Moves to the next key; false at the end. */
  next(): boolean {
    if (this.cancelled) throw new InternalError('the keyed state backend was disposed while a snapshot was being written');
    const readers = this.readers;
    const count = readers.length;
    // Lowest key; among equal keys the first layer, so the layers holding the same key all come after it.
    let minAt = -1;
    for (let i = 0; i < count; i++) {
      const r = readers[i] as LayerReader;
      if (!r.done && (minAt < 0 || compareGroupKeys(r, readers[minAt] as LayerReader) < 0)) minAt = i;
    }
    if (minAt < 0) return false;
    const min = readers[minAt] as LayerReader;
    const minKey = min.key();
    const minStrip = min.strip;
    let value = min.value();
    for (let i = minAt + 1; i < count; i++) {
      const r = readers[i] as LayerReader;
      if (r.done || r.key().compare(minKey, minStrip, minKey.length, r.strip) !== 0) continue;
      value = r.value();
      r.advance();
    }
    this.groupKey = minKey.subarray(minStrip);
    this.value = value;
    min.advance();
    return true;
  }

  /** Releases the cursors; a later `next()` fails rather than ending early (a shortened file must not pass). */
  cancel(): void {
    this.cancelled = true;
    this.close();
  }

  close(): void {
    for (const r of this.readers) r.close();
  }
}

function compareGroupKeys(a: LayerReader, b: LayerReader): number {
  const ak = a.key();
  const bk = b.key();
  return ak.compare(bk, b.strip, bk.length, a.strip);
}
