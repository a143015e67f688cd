import type { Key } from '../../core/index.ts';
import type { AggregateFunction, ReduceFunction } from '../descriptors.ts';
import {
  VOID_NAMESPACE,
  type InternalAggregatingState,
  type InternalListState,
  type InternalMapState,
  type InternalReducingState,
  type InternalValueState,
  type Namespace,
} from '../keyed-state.ts';
import type { Row, Slot } from './row.ts';

/** The backend's current key as a cached row (read from RocksDB first when it was not cached). */
export interface CurrentRow {
  currentRow(): Row;
}

/**
 * Raw state handles over the write-behind cache: the same stored forms as the memory backend's handles (list: an
 * owned array, map: an owned Map; values by reference), but every write marks the key's row dirty so that it is
 * written to RocksDB on eviction or at the next checkpoint. TTL is layered on top (ttl.ts).
 */
abstract class CachedHandle<V> {
  protected namespace: Namespace = VOID_NAMESPACE;

  constructor(
    protected readonly rows: CurrentRow,
    protected readonly id: number,
  ) {}

  setCurrentNamespace(namespace: Namespace): void {
    this.namespace = namespace;
  }

  clear(): void {
    const row = this.rows.currentRow();
    const slot = row.slot(this.id);
    if (slot === undefined || !slot.has(this.namespace)) return;
    row.markDirty();
    slot.delete(this.namespace);
    row.dropIfEmpty(this.id, slot);
  }

  protected read(): V | undefined {
    return this.rows.currentRow().slot(this.id)?.get(this.namespace) as V | undefined;
  }

  protected write(value: V): void {
    this.rows.currentRow().slotForWrite(this.id).set(this.namespace, value);
  }
}

export class CachedValueState<T> extends CachedHandle<T> implements InternalValueState<T> {
  value(): T | undefined {
    return this.read();
  }

  update(value: T): void {
    if (value === undefined) this.clear();
    else this.write(value);
  }
}

export class CachedListState<T> extends CachedHandle<T[]> implements InternalListState<T> {
  get(): T[] {
    const list = this.read();
    return list === undefined ? [] : list.slice();
  }

  add(value: T): void {
    const row = this.rows.currentRow();
    const list = row.slot(this.id)?.get(this.namespace) as T[] | undefined;
    if (list === undefined) row.slotForWrite(this.id).set(this.namespace, [value]);
    else {
      row.markDirty();
      list.push(value);
    }
  }

  addAll(values: readonly T[]): void {
    if (values.length === 0) return;
    const row = this.rows.currentRow();
    const list = row.slot(this.id)?.get(this.namespace) as T[] | undefined;
    if (list === undefined) row.slotForWrite(this.id).set(this.namespace, values.slice());
    else {
      row.markDirty();
      for (let i = 0; i < values.length; i++) list.push(values[i] as T);
    }
  }

  update(values: readonly T[]): void {
    if (values.length === 0) this.clear();
    else this.write(values.slice());
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    const row = this.rows.currentRow();
    const slot = row.slot(this.id);
    if (slot === undefined || !hasSource(slot, target, sources)) return;
    row.markDirty();
    let merged = slot.get(target) as T[] | undefined;
    for (const source of sources) {
      if (source === target) continue;
      const list = slot.get(source) as T[] | undefined;
      if (list === undefined) continue;
      slot.delete(source);
      if (merged === undefined) merged = list;
      else for (let i = 0; i < list.length; i++) merged.push(list[i] as T);
    }
    slot.set(target, merged as T[]);
  }
}

export class CachedMapState<UK extends Key, V> extends CachedHandle<Map<UK, V>> implements InternalMapState<UK, V> {
  get(key: UK): V | undefined {
    return this.read()?.get(key);
  }

  put(key: UK, value: V): void {
    const row = this.rows.currentRow();
    const map = row.slot(this.id)?.get(this.namespace) as Map<UK, V> | undefined;
    if (map === undefined) row.slotForWrite(this.id).set(this.namespace, new Map([[key, value]]));
    else {
      row.markDirty();
      map.set(key, value);
    }
  }

  putAll(entries: Iterable<readonly [UK, V]>): void {
    const row = this.rows.currentRow();
    let map = row.slot(this.id)?.get(this.namespace) as Map<UK, V> | undefined;
    for (const [k, v] of entries) {
      if (map === undefined) {
        map = new Map();
        row.slotForWrite(this.id).set(this.namespace, map);
      } else row.markDirty();
      map.set(k, v);
    }
  }

  remove(key: UK): void {
    const row = this.rows.currentRow();
    const slot = row.slot(this.id);
    const map = slot?.get(this.namespace) as Map<UK, V> | undefined;
    if (slot === undefined || map === undefined || !map.has(key)) return;
    row.markDirty();
    map.delete(key);
    if (map.size === 0) {
      slot.delete(this.namespace);
      row.dropIfEmpty(this.id, slot);
    }
  }

  contains(key: UK): boolean {
    const map = this.read();
    return map !== undefined && map.has(key);
  }

  entries(): [UK, V][] {
    const map = this.read();
    return map === undefined ? [] : Array.from(map);
  }

  keys(): UK[] {
    const map = this.read();
    return map === undefined ? [] : Array.from(map.keys());
  }

  values(): V[] {
    const map = this.read();
    return map === undefined ? [] : Array.from(map.values());
  }

  isEmpty(): boolean {
    // Empty maps are removed, so presence means non-empty.
    return this.read() === undefined;
  }
}

/** Folds the values of other namespaces into the target with `combine`, for the current key. */
function mergeInto(row: Row, slot: Slot | undefined, target: Namespace, sources: readonly Namespace[], combine: (a: unknown, b: unknown) => unknown): void {
  if (slot === undefined || !hasSource(slot, target, sources)) return;
  // Combine first: a throwing merge function leaves the entries as they were. A source named twice counts once
  // (as in the memory backend, where the first merge already removed it).
  let merged = slot.get(target);
  for (const source of new Set(sources)) {
    if (source === target) continue;
    const v = slot.get(source);
    if (v !== undefined) merged = merged === undefined ? v : combine(merged, v);
  }
  row.markDirty();
  for (const source of sources) if (source !== target) slot.delete(source);
  slot.set(target, merged);
}

/** Whether merging `sources` into `target` changes anything. */
function hasSource(slot: Slot, target: Namespace, sources: readonly Namespace[]): boolean {
  for (const source of sources) if (source !== target && slot.get(source) !== undefined) return true;
  return false;
}

export class CachedReducingState<T> extends CachedHandle<T> implements InternalReducingState<T> {
  constructor(
    rows: CurrentRow,
    id: number,
    private readonly reduce: ReduceFunction<T>,
  ) {
    super(rows, id);
  }

  get(): T | undefined {
    return this.read();
  }

  add(value: T): void {
    const current = this.read();
    // Reduce before writing: a throwing reduce must leave the entry (and the row) as it was.
    this.write(current === undefined ? value : this.reduce(current, value));
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    const row = this.rows.currentRow();
    mergeInto(row, row.slot(this.id), target, sources, this.reduce as (a: unknown, b: unknown) => unknown);
  }
}

export class CachedAggregatingState<IN, ACC, OUT> extends CachedHandle<ACC> implements InternalAggregatingState<IN, ACC, OUT> {
  private readonly merge: (a: unknown, b: unknown) => unknown;

  constructor(
    rows: CurrentRow,
    id: number,
    private readonly aggregate: AggregateFunction<IN, ACC, OUT>,
  ) {
    super(rows, id);
    this.merge = (a, b) => aggregate.merge(a as ACC, b as ACC);
  }

  get(): OUT | undefined {
    const acc = this.read();
    return acc === undefined ? undefined : this.aggregate.getResult(acc);
  }

  getAccumulator(): ACC | undefined {
    return this.read();
  }

  add(value: IN): void {
    const current = this.read();
    this.write(this.aggregate.add(value, current === undefined ? this.aggregate.createAccumulator() : current));
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    const row = this.rows.currentRow();
    mergeInto(row, row.slot(this.id), target, sources, this.merge);
  }
}
