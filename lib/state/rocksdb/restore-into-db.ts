import { keyGroupRangeContains, type Key, type KeyGroupRange } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, KeyedStateSnapshot, SharedStateStore } from '../backend.ts';
import { visitHandleFiles } from '../snapshot-format/handle-files.ts';
import { encodeGroupKey, groupKeyKeyGroup, type Bytes } from '../snapshot-format/key-bytes.ts';
import { decodeRow, encodeRow, rowEntryCount } from '../snapshot-format/row-codec.ts';
import { StoredStateCorruptError } from '../snapshot-format/state-errors.ts';
import type { RocksBatch } from './binding.ts';
import type { StateDb } from './state-db.ts';
import type { StateRegistry } from './state-registry.ts';
import { EVENT_TIMER_STATE, PROCESSING_TIMER_STATE, storedTimestamps, type TimerDomain } from '../timer-state.ts';
import type { Namespace } from '../keyed-state.ts';
import { indexKey } from './timer-index.ts';

/**
 * Writes restored state straight into the main area of a database, a write batch per block of a state file (or
 * per key group of a plain snapshot): streaming, so a restore's heap use does not grow with the state. Rows are
 * copied as bytes when the file's state ids match this backend's; otherwise they are re-encoded with its ids.
 * `entries` accumulates the change of the backend's entry count.
 */
export class DbRestorer {
  entries = 0;
  /** Pending event-time and processing-time timers restored (rows of the timer states, timer-state.ts). */
  readonly timerCounts: [number, number] = [0, 0];
  /** Key groups written by an earlier file of this restore: a row there may replace one, so it is read first. */
  private readonly written: Uint8Array;

  constructor(
    private readonly sdb: StateDb,
    private readonly registry: StateRegistry,
    private readonly range: KeyGroupRange,
    maxParallelism: number,
    private readonly tempDir: string,
  ) {
    this.written = new Uint8Array(maxParallelism);
  }

  async applyFiles(handle: FileKeyedStateSnapshot, store: SharedStateStore | undefined): Promise<void> {
    await visitHandleFiles(handle, store, this.tempDir, async (reader, ref) => {
      const remap = this.idsFor(reader.header.states);
      const touched = new Set<number>();
      for (let rows = await reader.next(); rows !== undefined; rows = await reader.next()) {
        const keys: Bytes[] = [];
        const values: (Bytes | undefined)[] = [];
        let mustRead = false;
        for (let i = 0; i < rows.count; i++) {
          const groupKey = rows.groupKeys[i] as Buffer;
          const keyGroup = groupKeyKeyGroup(groupKey);
          if (!keyGroupRangeContains(this.range, keyGroup)) continue;
          if (this.written[keyGroup] === 1) mustRead = true;
          touched.add(keyGroup);
          keys.push(groupKey);
          const value = rows.values[i];
          values.push(value === undefined || remap === undefined ? value : remapRow(value, remap, ref.path));
        }
        this.write(keys, values, mustRead);
      }
      for (const keyGroup of touched) this.written[keyGroup] = 1;
    });
  }

  applyPlain(snapshot: KeyedStateSnapshot): void {
    for (const group of snapshot.keyGroups) {
      if (!keyGroupRangeContains(this.range, group.keyGroup)) continue;
      const rows = new Map<Key, unknown[]>();
      for (const name of Object.keys(group.states)) {
        const id = this.idFor(name);
        for (const [key, namespace, value] of group.states[name] ?? []) {
          let flat = rows.get(key);
          if (flat === undefined) rows.set(key, (flat = []));
          flat.push(id, namespace, value);
        }
      }
      const keys: Bytes[] = [];
      const values: Bytes[] = [];
      for (const [key, flat] of rows) {
        keys.push(encodeGroupKey(group.keyGroup, key));
        values.push(Buffer.from(encodeRow(flat)));
      }
      this.write(keys, values, this.written[group.keyGroup] === 1);
      this.written[group.keyGroup] = 1;
    }
  }

  private write(keys: readonly Bytes[], values: readonly (Bytes | undefined)[], mustRead: boolean): void {
    if (keys.length === 0) return;
    const old = mustRead ? this.sdb.mainRows(keys) : undefined;
    const timerIds = this.timerIds();
    const batch = this.sdb.db.batch();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as Bytes;
      const value = values[i];
      if (value === undefined) batch.del(key);
      else {
        batch.put(key, value);
        this.entries += rowEntryCount(value);
        if (timerIds !== undefined) this.indexTimers(key, value, timerIds, batch);
      }
      const previous = old?.[i];
      if (previous !== undefined) {
        this.entries -= rowEntryCount(previous);
        // The replaced row's timers are gone; their index entries stay behind as stale ones (see the timer service).
        if (timerIds !== undefined) this.forEachTimer(previous, timerIds, (domain) => this.timerCounts[domain === 'event' ? 0 : 1]--);
      }
    }
    batch.write();
  }

  /** The ids of the timer states when rows may hold timers (decoding rows only then). */
  private timerIds(): Map<number, TimerDomain> | undefined {
    const event = this.registry.get(EVENT_TIMER_STATE);
    const processing = this.registry.get(PROCESSING_TIMER_STATE);
    if (event === undefined && processing === undefined) return undefined;
    const ids = new Map<number, TimerDomain>();
    if (event !== undefined) ids.set(event.id, 'event');
    if (processing !== undefined) ids.set(processing.id, 'processing');
    return ids;
  }

  /** The timer service finds due timers through an index, rebuilt here from the rows that hold timers. */
  private indexTimers(groupKey: Bytes, row: Bytes, ids: ReadonlyMap<number, TimerDomain>, batch: RocksBatch): void {
    this.forEachTimer(row, ids, (domain, namespace, timestamp) => {
      batch.put(indexKey(domain, timestamp, groupKey, namespace), EMPTY);
      this.timerCounts[domain === 'event' ? 0 : 1]++;
    });
  }

  private forEachTimer(
    row: Uint8Array,
    ids: ReadonlyMap<number, TimerDomain>,
    visit: (domain: TimerDomain, namespace: Namespace, timestamp: number) => void,
  ): void {
    const flat = decodeRow(row, this.sdb.db.location);
    for (let i = 0; i < flat.length; i += 3) {
      const domain = ids.get(flat[i] as number);
      if (domain === undefined) continue;
      const timestamps = storedTimestamps(flat[i + 2]);
      if (timestamps === undefined) throw new StoredStateCorruptError(this.sdb.db.location, 'a timer entry is not an array of timestamps');
      for (const timestamp of timestamps) visit(domain, flat[i + 1] as Namespace, timestamp);
    }
  }

  /** This backend's ids for a file's states; undefined when they are the same ids. */
  private idsFor(states: readonly (readonly [number, string])[]): Map<number, number> | undefined {
    const remap = new Map<number, number>();
    let same = true;
    for (const [fileId, name] of states) {
      const id = this.idFor(name);
      remap.set(fileId, id);
      if (id !== fileId) same = false;
    }
    return same ? undefined : remap;
  }

  private idFor(name: string): number {
    const { id, isNew } = this.registry.idFor(name);
    if (isNew) {
      const batch = this.sdb.db.batch();
      this.sdb.putStateName(batch, id, name);
      batch.write();
    }
    return id;
  }
}

const EMPTY: Bytes = Buffer.alloc(0);

function remapRow(bytes: Uint8Array, remap: ReadonlyMap<number, number>, source: string): Bytes {
  const flat = decodeRow(bytes, source);
  for (let i = 0; i < flat.length; i += 3) {
    const id = remap.get(flat[i] as number);
    if (id === undefined) throw new StoredStateCorruptError(source, `a row uses state id ${String(flat[i])}, which its header does not name`);
    flat[i] = id;
  }
  return Buffer.from(encodeRow(flat));
}
