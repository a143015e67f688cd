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
import type { StateTable } from './state-table.ts';

/**
 * Heap state handles over a StateTable. Stored forms: value/reducing -> the value; aggregating -> the accumulator;
 * list -> an array owned by the table (never handed out); map -> a Map owned by the table. Values themselves are
 * stored by reference (see MemoryKeyedStateBackend on immutability).
 */
abstract class MemoryHandle<V> {
  protected namespace: Namespace = VOID_NAMESPACE;

  constructor(protected readonly table: StateTable<V>) {}

  setCurrentNamespace(namespace: Namespace): void {
    this.namespace = namespace;
  }

  clear(): void {
    this.table.delete(this.namespace);
  }
}

export class MemoryValueState<T> extends MemoryHandle<T> implements InternalValueState<T> {
  value(): T | undefined {
    return this.table.get(this.namespace);
  }

  update(value: T): void {
    if (value === undefined) this.table.delete(this.namespace);
    else this.table.set(this.namespace, value);
  }
}

export class MemoryListState<T> extends MemoryHandle<T[]> implements InternalListState<T> {
  get(): T[] {
    const list = this.table.get(this.namespace);
    return list === undefined ? [] : list.slice();
  }

  add(value: T): void {
    const list = this.table.get(this.namespace);
    if (list === undefined) this.table.set(this.namespace, [value]);
    else list.push(value);
  }

  addAll(values: readonly T[]): void {
    if (values.length === 0) return;
    const list = this.table.get(this.namespace);
    if (list === undefined) this.table.set(this.namespace, values.slice());
    else for (let i = 0; i < values.length; i++) list.push(values[i] as T);
  }

  update(values: readonly T[]): void {
    if (values.length === 0) this.table.delete(this.namespace);
    else this.table.set(this.namespace, values.slice());
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    const entries = this.table.entriesOfCurrentKey();
    if (entries === undefined) return;
    let merged = entries.get(target);
    for (const source of sources) {
      if (source === target) continue;
      const list = entries.get(source);
      if (list === undefined) continue;
      entries.delete(source);
      if (merged === undefined) merged = list;
      else for (let i = 0; i < list.length; i++) merged.push(list[i] as T);
    }
    if (merged !== undefined) entries.set(target, merged);
  }
}

export class MemoryMapState<UK extends Key, V> extends MemoryHandle<Map<UK, V>> implements InternalMapState<UK, V> {
  get(key: UK): V | undefined {
    const map = this.table.get(this.namespace);
    return map === undefined ? undefined : map.get(key);
  }

  put(key: UK, value: V): void {
    const map = this.table.get(this.namespace);
    if (map === undefined) this.table.set(this.namespace, new Map([[key, value]]));
    else map.set(key, value);
  }

  putAll(entries: Iterable<readonly [UK, V]>): void {
    let map = this.table.get(this.namespace);
    for (const [k, v] of entries) {
      if (map === undefined) {
        map = new Map();
        this.table.set(this.namespace, map);
      }
      map.set(k, v);
    }
  }

  remove(key: UK): void {
    const map = this.table.get(this.namespace);
    if (map !== undefined && map.delete(key) && map.size === 0) this.table.delete(this.namespace);
  }

  contains(key: UK): boolean {
    const map = this.table.get(this.namespace);
    return map !== undefined && map.has(key);
  }

  entries(): [UK, V][] {
    const map = this.table.get(this.namespace);
    return map === undefined ? [] : Array.from(map);
  }

  keys(): UK[] {
    const map = this.table.get(this.namespace);
    return map === undefined ? [] : Array.from(map.keys());
  }

  values(): V[] {
    const map = this.table.get(this.namespace);
    return map === undefined ? [] : Array.from(map.values());
  }

  isEmpty(): boolean {
    // Empty maps are removed, so presence means non-empty.
    return this.table.get(this.namespace) === undefined;
  }
}

/** Folds values of other namespaces into the target with `combine`, for the current key. */
function mergeInto<V>(table: StateTable<V>, target: Namespace, sources: readonly Namespace[], combine: (a: V, b: V) => V) {
  const entries = table.entriesOfCurrentKey();
  if (entries === undefined) return;
  let merged = entries.get(target);
  let changed = false;
  for (const source of sources) {
    if (source === target) continue;
    const v = entries.get(source);
    if (v === undefined) continue;
    entries.delete(source);
    merged = merged === undefined ? v : combine(merged, v);
    changed = true;
  }
  if (changed) entries.set(target, merged as V);
}

export class MemoryReducingState<T> extends MemoryHandle<T> implements InternalReducingState<T> {
  constructor(
    table: StateTable<T>,
    private readonly reduce: ReduceFunction<T>,
  ) {
    super(table);
  }

  get(): T | undefined {
    return this.table.get(this.namespace);
  }

  add(value: T): void {
    const entries = this.table.entriesOfCurrentKey();
    const current = entries === undefined ? undefined : entries.get(this.namespace);
    // Reduce before creating the key's entry map: a throwing reduce must not leave an empty map behind.
    const next = current === undefined ? value : this.reduce(current, value);
    if (entries === undefined) this.table.set(this.namespace, next);
    else entries.set(this.namespace, next);
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    mergeInto(this.table, target, sources, this.reduce);
  }
}

export class MemoryAggregatingState<IN, ACC, OUT>
  extends MemoryHandle<ACC>
  implements InternalAggregatingState<IN, ACC, OUT>
{
  private readonly merge: (a: ACC, b: ACC) => ACC;

  constructor(
    table: StateTable<ACC>,
    private readonly aggregate: AggregateFunction<IN, ACC, OUT>,
  ) {
    super(table);
    this.merge = (a, b) => aggregate.merge(a, b);
  }

  get(): OUT | undefined {
    const acc = this.table.get(this.namespace);
    return acc === undefined ? undefined : this.aggregate.getResult(acc);
  }

  getAccumulator(): ACC | undefined {
    return this.table.get(this.namespace);
  }

  add(value: IN): void {
    const entries = this.table.entriesOfCurrentKey();
    const current = entries === undefined ? undefined : entries.get(this.namespace);
    const next = this.aggregate.add(value, current === undefined ? this.aggregate.createAccumulator() : current);
    if (entries === undefined) this.table.set(this.namespace, next);
    else entries.set(this.namespace, next);
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    mergeInto(this.table, target, sources, this.merge);
  }
}
