import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { InternalError } from '../../core/index.ts';
import type { Bytes } from '../snapshot-format/key-bytes.ts';
import type { RocksBatch } from './binding.ts';
import type { RecoveryMarker } from './db-layout.ts';
import type { PendingSeal, Row } from './row.ts';
import type { StateDb } from './state-db.ts';

/** Rows encoded and written per chunk, between which the task keeps processing. */
const CHUNK_ROWS = 2000;

/**
 * The rows a checkpoint's synchronous phase found dirty, written into its sealed generation afterwards (copy-on-write):
 * the synchronous phase only marks the rows, so it costs microseconds per dirty key rather than an encoding. A row
 * that is about to change first hands its sealed form to the batch (`capture`); one that leaves the cache is
 * written by the eviction itself (`take`). `flush` writes the rest in chunks and then the recovery marker, so the
 * database holds the checkpoint's state exactly when the marker exists.
 */
export class SealBatch implements PendingSeal {
  private rows: Row[] = [];
  private captured: [Bytes, Bytes | undefined][] = [];

  constructor(
    readonly generation: number,
    private readonly encode: (row: Row) => Bytes | undefined,
    private readonly put: (sdb: StateDb, batch: RocksBatch, groupKey: Bytes, row: Bytes | undefined) => void,
  ) {}

  get size(): number {
    return this.rows.length;
  }

  add(row: Row): void {
    row.pendingSeal = this;
    this.rows.push(row);
  }

  capture(row: Row): void {
    this.captured.push([row.groupKey(), this.take(row)]);
  }

  take(row: Row): Bytes | undefined {
    if (row.pendingSeal !== this) throw new InternalError('a row was handed to a checkpoint that does not hold it');
    row.pendingSeal = undefined;
    return this.encode(row);
  }

  async flush(sdb: StateDb, marker: RecoveryMarker, isCancelled: () => boolean): Promise<void> {
    const rows = this.rows;
    for (let start = 0; start < rows.length || start === 0; start += CHUNK_ROWS) {
      if (isCancelled()) throw new InternalError('the keyed state backend was disposed during a checkpoint');
      const end = Math.min(rows.length, start + CHUNK_ROWS);
      for (let i = start; i < end; i++) {
        const row = rows[i] as Row;
        if (row.pendingSeal === this) this.capture(row);
      }
      if (end < rows.length) {
        this.write(sdb, undefined);
        await yieldToEventLoop();
      }
    }
    this.write(sdb, marker);
    this.rows = [];
  }

  private write(sdb: StateDb, marker: RecoveryMarker | undefined): void {
    const batch = sdb.db.batch();
    for (const [groupKey, row] of this.captured) this.put(sdb, batch, groupKey, row);
    if (marker !== undefined) sdb.putMarker(batch, marker);
    batch.write();
    this.captured = [];
  }
}
