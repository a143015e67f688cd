import type { Key } from '../../core/index.ts';
import type { Row } from './row.ts';

/**
 * The write-behind cache's rows, bounded by the backend (which decides when to evict). Eviction is CLOCK (second
 * chance) over the Map's insertion order: a hit only sets the row's reference bit, so the hot path does one Map
 * lookup and one field write; the sweep gives referenced rows another round by moving them to the back.
 */
export class RowCache {
  private readonly rows = new Map<Key, Row>();

  get size(): number {
    return this.rows.size;
  }

  get(key: Key): Row | undefined {
    const row = this.rows.get(key);
    if (row !== undefined) row.ref = true;
    return row;
  }

  has(key: Key): boolean {
    return this.rows.has(key);
  }

  insert(row: Row): void {
    this.rows.set(row.key, row);
  }

  values(): IterableIterator<Row> {
    return this.rows.values();
  }

  /** Removes and returns up to `count` rows not referenced since the last sweep, never `keep`. */
  takeVictims(count: number, keep: Row | undefined): Row[] {
    const victims: Row[] = [];
    if (count <= 0) return victims;
    // Every row can be passed over once (losing its bit) before it is taken, so two rounds always suffice.
    let budget = 2 * this.rows.size;
    for (const row of this.rows.values()) {
      if (victims.length >= count || budget-- <= 0) break;
      this.rows.delete(row.key);
      if (row.ref || row === keep) {
        row.ref = false;
        this.rows.set(row.key, row);
      } else {
        victims.push(row);
      }
    }
    return victims;
  }

  clear(): void {
    this.rows.clear();
  }
}
