import { InternalError, type Key, type KeyGroupFunction, type KeyGroupRange } from '../../core/index.ts';
import { decodeGroupKey, type Bytes } from '../snapshot-format/key-bytes.ts';
import { decodeRow } from '../snapshot-format/row-codec.ts';
import type { Namespace } from '../keyed-state.ts';
import type { RocksBatch } from './binding.ts';
import type { CurrentRow } from './cached-handles.ts';
import type { GenerationLog } from './generation-log.ts';
import { Row } from './row.ts';
import { RowCache } from './row-cache.ts';
import { decodeStoredRow, encodeLiveRow } from './row-forms.ts';
import type { RocksDbStateMetrics } from './rocksdb-metrics.ts';
import type { SealBatch } from './seal-batch.ts';
import type { LookedUp, StateDb } from './state-db.ts';
import type { StateRegistry } from './state-registry.ts';

/** What the row store needs from its backend. */
export interface RowStoreContext {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Key to key group (the operator's keyed edge hash). */
  readonly keyGroupOf: KeyGroupFunction;
  readonly cacheMaxKeys: number;
  readonly registry: StateRegistry;
  readonly generations: GenerationLog;
  readonly counters: RocksDbStateMetrics;
  /** The open database; undefined while it opens (or after dispose). */
  db(): StateDb | undefined;
  /** Names the database in corruption errors. */
  source(): string;
  /** Before anything that may read or write the database: throws when the backend is unusable. */
  beforeAccess(): void;
  isDisposed(): boolean;
}

/**
 * The keys of a RocksDB backend as cached rows over the database: the current key, the bounded write-behind cache
 * (CLOCK), reads of misses (batched: one multi-get per prefetch, per timer round, or per rare unprefetched key),
 * eviction of dirty victims into the current overflow generation, and the entry count of what the database holds.
 */
export class RowStore implements CurrentRow {
  readonly cache = new RowCache();
  current: Row | undefined;
  /** Entries held by the database (all layers), excluding the not yet written changes of dirty cached rows. */
  dbEntries = 0;
  /** Rows were written to the database (a fresh one holds none, so its misses need no read). */
  hasStored = false;
  private readonly slack: number;

  constructor(private readonly ctx: RowStoreContext) {
    this.slack = ctx.cacheMaxKeys >> 3;
  }

  setCurrentKey(key: Key): void {
    const current = this.current;
    if (current !== undefined && current.key === key) return;
    const row = this.cache.get(key);
    if (row === undefined) this.readMissing(key);
    else this.current = row;
  }

  currentRow(): Row {
    const row = this.current;
    if (row === undefined) throw new InternalError('keyed state was accessed before a current key was set');
    return row;
  }

  /** See KeyedStateBackend.prefetch: one multi-get for every key of `keys` that is not cached. */
  prefetch(keys: readonly Key[]): void | Promise<void> {
    const missing = this.missingRows(keys, false);
    if (missing === undefined) return;
    this.ctx.beforeAccess();
    this.evict(this.cache.size + missing.size - this.ctx.cacheMaxKeys);
    const sdb = this.ctx.db();
    if (sdb === undefined || !this.hasStored) {
      // Nothing stored yet (a fresh database, possibly still opening): every missing key is known to be absent.
      for (const row of missing.values()) this.cache.insert(row);
      return;
    }
    const rows = [...missing.values()];
    const groupKeys = rows.map((r) => r.groupKey());
    this.ctx.counters.prefetchReads++;
    this.ctx.counters.prefetchedKeys += rows.length;
    return sdb.read(groupKeys, this.generationsFor).then((found) => {
      if (this.ctx.isDisposed()) return;
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as Row;
        if (!this.cache.has(row.key)) this.cache.insert(this.rowFrom(row, found[i] as LookedUp));
      }
    });
  }

  /** The cached row of `key`, read first when it is not cached; the current key does not change. */
  rowFor(key: Key): Row {
    const current = this.current;
    if (current !== undefined && current.key === key) return current;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    this.cacheRows([key]);
    return this.cache.get(key) as Row;
  }

  /** Like prefetch, but with one synchronous multi-get: for timer rounds, which operators fire synchronously. */
  cacheRows(keys: readonly Key[]): void {
    let missing = this.missingRows(keys, true);
    if (missing === undefined) return;
    this.ctx.beforeAccess();
    this.evict(this.cache.size + missing.size - this.ctx.cacheMaxKeys);
    // The eviction may have taken keys of `keys` that were cached: look again.
    missing = this.missingRows(keys, true);
    if (missing === undefined) return;
    const rows = [...missing.values()];
    const sdb = this.ctx.db();
    if (sdb === undefined || !this.hasStored) {
      for (const row of rows) this.cache.insert(row);
      return;
    }
    this.ctx.counters.syncReads++;
    const found = sdb.readSync(rows.map((r) => r.groupKey()), this.generationsFor);
    for (let i = 0; i < rows.length; i++) this.cache.insert(this.rowFrom(rows[i] as Row, found[i] as LookedUp));
  }

  /**
   * A checkpoint's synchronous phase: hands every dirty row to `seal` (which writes it as it is now, later) and
   * accounts for it as stored.
   */
  sealDirtyRows(seal: SealBatch): void {
    for (const row of this.cache.values()) if (row.dirty && this.settle(row)) seal.add(row);
    if (seal.size > 0) this.hasStored = true;
    this.ctx.counters.writtenRows += seal.size;
  }

  /** Every overflow write goes here: the generation's key filter learns the key, so reads look in that generation for it. */
  putOverflow(sdb: StateDb, batch: RocksBatch, generation: number, groupKey: Bytes, bytes: Bytes | undefined): void {
    sdb.putOverflow(batch, generation, groupKey, bytes);
    this.ctx.generations.noteKey(generation, groupKey);
  }

  entryCount(): number {
    let count = this.dbEntries;
    for (const row of this.cache.values()) if (row.dirty) count += row.entryCount() - row.stored;
    return count;
  }

  /** Keys with an entry of state `id` under `namespace`: the cache, then a scan of the database. */
  keysWith(id: number, namespace: Namespace): Key[] {
    const out: Key[] = [];
    for (const row of this.cache.values()) if (row.slot(id)?.has(namespace) === true) out.push(row.key);
    const sdb = this.ctx.db();
    if (sdb === undefined || !this.hasStored) return out;
    const view = sdb.view(this.ctx.generations.generationsUpTo(this.ctx.generations.current), true);
    try {
      while (view.next()) {
        if (view.value.length === 0) continue;
        const key = decodeGroupKey(view.groupKey);
        if (this.cache.has(key)) continue;
        const flat = decodeRow(view.value, this.ctx.source());
        for (let i = 0; i < flat.length; i += 3) {
          if (flat[i] === id && flat[i + 1] === namespace) {
            out.push(key);
            break;
          }
        }
      }
    } finally {
      view.close();
    }
    return out;
  }

  clear(): void {
    this.cache.clear();
    this.current = undefined;
    this.dbEntries = 0;
  }

  /** Rows for the keys of `keys` that are not cached; keys of other subtasks are skipped or (`strict`) refused. */
  private missingRows(keys: readonly Key[], strict: boolean): Map<Key, Row> | undefined {
    const { start, end } = this.ctx.keyGroupRange;
    let missing: Map<Key, Row> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as Key;
      if (this.cache.has(key) || missing?.has(key) === true) continue;
      const keyGroup = this.ctx.keyGroupOf(key, this.ctx.maxParallelism);
      if (keyGroup < start || keyGroup > end) {
        if (strict) throw this.wrongKeyGroup(key, keyGroup);
        continue;
      }
      (missing ??= new Map()).set(key, new Row(key, keyGroup));
    }
    return missing;
  }

  /** A key that was not prefetched becomes current: read now (one synchronous multi-get) or known absent. */
  private readMissing(key: Key): void {
    const keyGroup = this.ctx.keyGroupOf(key, this.ctx.maxParallelism);
    const { start, end } = this.ctx.keyGroupRange;
    if (keyGroup < start || keyGroup > end) throw this.wrongKeyGroup(key, keyGroup);
    this.ctx.beforeAccess();
    let row = new Row(key, keyGroup);
    const sdb = this.ctx.db();
    if (sdb !== undefined && this.hasStored) {
      this.ctx.counters.syncReads++;
      const [found] = sdb.readSync([row.groupKey()], this.generationsFor);
      row = this.rowFrom(row, found as LookedUp);
    }
    this.cache.insert(row);
    this.current = row;
    if (this.cache.size > this.ctx.cacheMaxKeys + this.slack) this.evict(this.cache.size - this.ctx.cacheMaxKeys);
  }

  private wrongKeyGroup(key: Key, keyGroup: number): InternalError {
    const { start, end } = this.ctx.keyGroupRange;
    return new InternalError(
      `key ${JSON.stringify(key)} belongs to key group ${keyGroup}, outside this subtask's range ` +
        `[${start}, ${end}]: records were partitioned to the wrong subtask`,
    );
  }

  private rowFrom(placeholder: Row, found: LookedUp): Row {
    if (found.value === undefined) {
      placeholder.inDb = found.inDb;
      return placeholder;
    }
    const row = decodeStoredRow(found.value, placeholder.key, placeholder.keyGroup, this.ctx.registry, this.ctx.source());
    row.setGroupKey(placeholder.groupKey());
    return row;
  }

  private readonly generationsFor = (groupKey: Uint8Array, out: number[]): void => this.ctx.generations.generationsFor(groupKey, out);

  /**
   * A dirty row is about to be written as it is now: it becomes clean and its entries count as stored. False when
   * there is nothing to write (no state, and none in the database to delete).
   */
  private settle(row: Row): boolean {
    row.dirty = false;
    const entries = row.entryCount();
    this.dbEntries += entries - row.stored;
    row.stored = entries;
    if (entries === 0 && !row.inDb) return false;
    if (entries > 0) row.inDb = true;
    return true;
  }

  /** Writes dirty victims to the current generation and drops `count` rows from the cache (never the current one). */
  private evict(count: number): void {
    const sdb = this.ctx.db();
    if (count <= 0 || sdb === undefined) return;
    const victims = this.cache.takeVictims(count, this.current);
    const { counters, generations, registry } = this.ctx;
    counters.evictedKeys += victims.length;
    const generation = generations.current;
    const batch = sdb.db.batch();
    let written = 0;
    for (const row of victims) {
      // A checkpoint that has not written this row yet gets it now, into its own generation.
      const seal = row.pendingSeal;
      if (seal !== undefined) this.putOverflow(sdb, batch, seal.generation, row.groupKey(), seal.take(row));
      if (!row.dirty || !this.settle(row)) continue;
      this.putOverflow(sdb, batch, generation, row.groupKey(), encodeLiveRow(row, registry));
      written++;
    }
    batch.write();
    if (written === 0) return;
    this.hasStored = true;
    counters.writtenRows += written;
    generations.wrote(written);
  }
}
