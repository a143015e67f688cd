import { ConfigError, type Key } from '../core/index.ts';
import type { AggregateFunction, ReduceFunction, StateTtlConfig } from './descriptors.ts';
import {
  VOID_NAMESPACE,
  type InternalAggregatingState,
  type InternalListState,
  type InternalMapState,
  type InternalReducingState,
  type InternalValueState,
  type Namespace,
} from './keyed-state.ts';

/**
 * State time-to-live as a layer over raw state handles (the design of Flink's TtlStateFactory): a backend stores
 * `TtlValue` wrappers in plain value/list/map handles and hands out the decorators below, so every backend gets
 * the same semantics without knowing about TTL:
 * - value, reducing and aggregating state: one timestamp per (key, namespace) entry;
 * - list state: one timestamp per element; map state: one timestamp per map entry.
 * Expired data is never returned; it is removed when it is touched. Backends drop it from snapshots with
 * `TtlPolicy.isExpired` / `liveElements` / `liveMapEntries`.
 *
 * Wrappers are never mutated: a renewal writes a new wrapper, so a snapshot may share wrappers with live state.
 * Stored (and snapshotted) form: `{ v: value, t: lastAccessMs }`.
 */
export interface TtlValue<T> {
  readonly v: T;
  /** Processing time of the last access that renewed the entry. */
  readonly t: number;
}

export class TtlPolicy {
  readonly ttlMs: number;
  readonly renewOnRead: boolean;

  constructor(
    config: StateTtlConfig,
    readonly now: () => number,
  ) {
    if (typeof config.ttlMs !== 'number' || !(config.ttlMs > 0) || !Number.isFinite(config.ttlMs)) {
      throw new ConfigError(`state TTL must be a positive finite number of milliseconds, got ${String(config.ttlMs)}`);
    }
    const updateType = config.updateType ?? 'onCreateAndWrite';
    if (updateType !== 'onCreateAndWrite' && updateType !== 'onReadAndWrite') {
      throw new ConfigError(`state TTL updateType must be 'onCreateAndWrite' or 'onReadAndWrite', got '${String(updateType)}'`);
    }
    this.ttlMs = config.ttlMs;
    this.renewOnRead = updateType === 'onReadAndWrite';
  }

  wrap<T>(value: T, now: number = this.now()): TtlValue<T> {
    return { v: value, t: now };
  }

  isExpired(entry: TtlValue<unknown>, now: number): boolean {
    return entry.t + this.ttlMs <= now;
  }

  /** The same TTL semantics: a handle may be re-requested with an equal config. */
  sameAs(config: StateTtlConfig | undefined): boolean {
    return (
      config !== undefined &&
      config.ttlMs === this.ttlMs &&
      ((config.updateType ?? 'onCreateAndWrite') === 'onReadAndWrite') === this.renewOnRead
    );
  }
}

/** Non-expired elements of a stored TTL list, or undefined when none is left. Returns `list` itself when all live. */
export function liveElements<T>(
  list: readonly TtlValue<T>[],
  policy: TtlPolicy,
  now: number,
): readonly TtlValue<T>[] | undefined {
  let firstExpired = -1;
  for (let i = 0; i < list.length; i++) {
    if (policy.isExpired(list[i] as TtlValue<T>, now)) {
      firstExpired = i;
      break;
    }
  }
  if (firstExpired < 0) return list.length === 0 ? undefined : list;
  const live = list.slice(0, firstExpired);
  for (let i = firstExpired + 1; i < list.length; i++) {
    const e = list[i] as TtlValue<T>;
    if (!policy.isExpired(e, now)) live.push(e);
  }
  return live.length === 0 ? undefined : live;
}

/** Non-expired entries of a stored TTL map, as pairs (snapshot form), or undefined when none is left. */
export function liveMapEntries<UK, V>(
  entries: Iterable<readonly [UK, TtlValue<V>]>,
  policy: TtlPolicy,
  now: number,
): [UK, TtlValue<V>][] | undefined {
  const live: [UK, TtlValue<V>][] = [];
  for (const [k, e] of entries) if (!policy.isExpired(e, now)) live.push([k, e]);
  return live.length === 0 ? undefined : live;
}

class TtlValueState<T> implements InternalValueState<T> {
  constructor(
    private readonly inner: InternalValueState<TtlValue<T>>,
    private readonly policy: TtlPolicy,
  ) {}

  setCurrentNamespace(namespace: Namespace): void {
    this.inner.setCurrentNamespace(namespace);
  }

  value(): T | undefined {
    return readLive(this.inner, this.policy);
  }

  update(value: T): void {
    if (value === undefined) this.inner.clear();
    else this.inner.update(this.policy.wrap(value));
  }

  clear(): void {
    this.inner.clear();
  }
}

/** Reads a TTL-wrapped single value: expired -> cleared and undefined; renewed when reads count as access. */
function readLive<T>(inner: InternalValueState<TtlValue<T>>, policy: TtlPolicy): T | undefined {
  const entry = inner.value();
  if (entry === undefined) return undefined;
  const now = policy.now();
  if (policy.isExpired(entry, now)) {
    inner.clear();
    return undefined;
  }
  if (policy.renewOnRead && entry.t !== now) inner.update(policy.wrap(entry.v, now));
  return entry.v;
}

class TtlListState<T> implements InternalListState<T> {
  constructor(
    private readonly inner: InternalListState<TtlValue<T>>,
    private readonly policy: TtlPolicy,
  ) {}

  setCurrentNamespace(namespace: Namespace): void {
    this.inner.setCurrentNamespace(namespace);
  }

  get(): T[] {
    const stored = this.inner.get();
    if (stored.length === 0) return [];
    const now = this.policy.now();
    const live = liveElements(stored, this.policy, now);
    if (live === undefined) {
      this.inner.clear();
      return [];
    }
    const values = new Array<T>(live.length);
    for (let i = 0; i < live.length; i++) values[i] = (live[i] as TtlValue<T>).v;
    if (this.policy.renewOnRead) {
      const renewed = new Array<TtlValue<T>>(values.length);
      for (let i = 0; i < values.length; i++) renewed[i] = this.policy.wrap(values[i] as T, now);
      this.inner.update(renewed);
    } else if (live !== stored) {
      this.inner.update(live);
    }
    return values;
  }

  add(value: T): void {
    this.inner.add(this.policy.wrap(value));
  }

  addAll(values: readonly T[]): void {
    if (values.length === 0) return;
    this.inner.addAll(this.wrapAll(values));
  }

  update(values: readonly T[]): void {
    this.inner.update(this.wrapAll(values));
  }

  clear(): void {
    this.inner.clear();
  }

  /** Concatenates; expired elements of the sources are dropped when the merged list is read. */
  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    this.inner.mergeNamespaces(target, sources);
  }

  private wrapAll(values: readonly T[]): TtlValue<T>[] {
    const now = this.policy.now();
    const wrapped = new Array<TtlValue<T>>(values.length);
    for (let i = 0; i < values.length; i++) wrapped[i] = this.policy.wrap(values[i] as T, now);
    return wrapped;
  }
}

class TtlMapState<UK extends Key, V> implements InternalMapState<UK, V> {
  constructor(
    private readonly inner: InternalMapState<UK, TtlValue<V>>,
    private readonly policy: TtlPolicy,
  ) {}

  setCurrentNamespace(namespace: Namespace): void {
    this.inner.setCurrentNamespace(namespace);
  }

  get(key: UK): V | undefined {
    const entry = this.inner.get(key);
    if (entry === undefined) return undefined;
    const now = this.policy.now();
    if (this.policy.isExpired(entry, now)) {
      this.inner.remove(key);
      return undefined;
    }
    if (this.policy.renewOnRead && entry.t !== now) this.inner.put(key, this.policy.wrap(entry.v, now));
    return entry.v;
  }

  put(key: UK, value: V): void {
    this.inner.put(key, this.policy.wrap(value));
  }

  putAll(entries: Iterable<readonly [UK, V]>): void {
    const now = this.policy.now();
    const wrapped: [UK, TtlValue<V>][] = [];
    for (const [k, v] of entries) wrapped.push([k, this.policy.wrap(v, now)]);
    if (wrapped.length > 0) this.inner.putAll(wrapped);
  }

  remove(key: UK): void {
    this.inner.remove(key);
  }

  contains(key: UK): boolean {
    return this.get(key) !== undefined;
  }

  entries(): [UK, V][] {
    const stored = this.inner.entries();
    if (stored.length === 0) return stored as unknown as [UK, V][];
    const now = this.policy.now();
    const out: [UK, V][] = [];
    for (const [k, entry] of stored) {
      if (this.policy.isExpired(entry, now)) {
        this.inner.remove(k);
        continue;
      }
      if (this.policy.renewOnRead && entry.t !== now) this.inner.put(k, this.policy.wrap(entry.v, now));
      out.push([k, entry.v]);
    }
    return out;
  }

  keys(): UK[] {
    return this.entries().map((e) => e[0]);
  }

  values(): V[] {
    return this.entries().map((e) => e[1]);
  }

  isEmpty(): boolean {
    if (this.inner.isEmpty()) return true;
    const now = this.policy.now();
    let live = false;
    for (const [k, entry] of this.inner.entries()) {
      if (this.policy.isExpired(entry, now)) this.inner.remove(k);
      else live = true;
    }
    return !live;
  }

  clear(): void {
    this.inner.clear();
  }
}

/**
 * Shared by reducing and aggregating state: the accumulator is one TTL-wrapped value per entry. Merging reads
 * each source namespace through the value handle, so it needs no merge support from the raw handle.
 */
abstract class TtlAccumulatingState<ACC> {
  private namespace: Namespace = VOID_NAMESPACE;

  constructor(
    protected readonly inner: InternalValueState<TtlValue<ACC>>,
    protected readonly policy: TtlPolicy,
  ) {}

  protected abstract combine(a: ACC, b: ACC): ACC;

  setCurrentNamespace(namespace: Namespace): void {
    this.namespace = namespace;
    this.inner.setCurrentNamespace(namespace);
  }

  getAccumulator(): ACC | undefined {
    return readLive(this.inner, this.policy);
  }

  clear(): void {
    this.inner.clear();
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    const inner = this.inner;
    const now = this.policy.now();
    let merged: ACC | undefined;
    let found = false;
    try {
      for (const source of sources) {
        if (source === target) continue;
        inner.setCurrentNamespace(source);
        const entry = inner.value();
        if (entry === undefined) continue;
        inner.clear();
        if (this.policy.isExpired(entry, now)) continue;
        merged = found ? this.combine(merged as ACC, entry.v) : entry.v;
        found = true;
      }
      if (!found) return;
      inner.setCurrentNamespace(target);
      const existing = inner.value();
      if (existing !== undefined && !this.policy.isExpired(existing, now)) merged = this.combine(existing.v, merged as ACC);
      inner.update(this.policy.wrap(merged as ACC, now));
    } finally {
      inner.setCurrentNamespace(this.namespace);
    }
  }

  /** The live accumulator for a write (an expired one counts as absent). */
  protected accumulatorForWrite(now: number): ACC | undefined {
    const entry = this.inner.value();
    return entry === undefined || this.policy.isExpired(entry, now) ? undefined : entry.v;
  }
}

class TtlReducingState<T> extends TtlAccumulatingState<T> implements InternalReducingState<T> {
  constructor(
    inner: InternalValueState<TtlValue<T>>,
    private readonly reduce: ReduceFunction<T>,
    policy: TtlPolicy,
  ) {
    super(inner, policy);
  }

  protected combine(a: T, b: T): T {
    return this.reduce(a, b);
  }

  get(): T | undefined {
    return this.getAccumulator();
  }

  add(value: T): void {
    const now = this.policy.now();
    const current = this.accumulatorForWrite(now);
    this.inner.update(this.policy.wrap(current === undefined ? value : this.reduce(current, value), now));
  }
}

class TtlAggregatingState<IN, ACC, OUT>
  extends TtlAccumulatingState<ACC>
  implements InternalAggregatingState<IN, ACC, OUT>
{
  constructor(
    inner: InternalValueState<TtlValue<ACC>>,
    private readonly aggregate: AggregateFunction<IN, ACC, OUT>,
    policy: TtlPolicy,
  ) {
    super(inner, policy);
  }

  protected combine(a: ACC, b: ACC): ACC {
    return this.aggregate.merge(a, b);
  }

  get(): OUT | undefined {
    const acc = this.getAccumulator();
    return acc === undefined ? undefined : this.aggregate.getResult(acc);
  }

  add(value: IN): void {
    const now = this.policy.now();
    const current = this.accumulatorForWrite(now) ?? this.aggregate.createAccumulator();
    this.inner.update(this.policy.wrap(this.aggregate.add(value, current), now));
  }
}

export function ttlValueState<T>(inner: InternalValueState<TtlValue<T>>, policy: TtlPolicy): InternalValueState<T> {
  return new TtlValueState(inner, policy);
}

export function ttlListState<T>(inner: InternalListState<TtlValue<T>>, policy: TtlPolicy): InternalListState<T> {
  return new TtlListState(inner, policy);
}

export function ttlMapState<UK extends Key, V>(
  inner: InternalMapState<UK, TtlValue<V>>,
  policy: TtlPolicy,
): InternalMapState<UK, V> {
  return new TtlMapState(inner, policy);
}

/** Reducing state over a raw value handle that stores the TTL-wrapped reduced value. */
export function ttlReducingState<T>(
  inner: InternalValueState<TtlValue<T>>,
  reduce: ReduceFunction<T>,
  policy: TtlPolicy,
): InternalReducingState<T> {
  return new TtlReducingState(inner, reduce, policy);
}

/** Aggregating state over a raw value handle that stores the TTL-wrapped accumulator. */
export function ttlAggregatingState<IN, ACC, OUT>(
  inner: InternalValueState<TtlValue<ACC>>,
  aggregate: AggregateFunction<IN, ACC, OUT>,
  policy: TtlPolicy,
): InternalAggregatingState<IN, ACC, OUT> {
  return new TtlAggregatingState(inner, aggregate, policy);
}
