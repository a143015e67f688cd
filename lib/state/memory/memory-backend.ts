import {
  ConfigError,
  InternalError,
  keyGroupOf,
  keyGroupRangeContains,
  type Key,
  type KeyGroupFunction,
  type KeyGroupRange,
} from '../../core/index.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkedKeyGroupRange,
  isFileKeyedStateSnapshot,
  type FileKeyedStateSnapshot,
  type KeyedStateBackend,
  type KeyedStateBackendOptions,
  type KeyedStateHandle,
  type KeyedStateSnapshot,
  type KeyGroupSnapshot,
  type SharedStateStore,
} from '../backend.ts';
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  StateDescriptor,
  ValueStateDescriptor,
} from '../descriptors.ts';
import type {
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
  Namespace,
} from '../keyed-state.ts';
import {
  liveElements,
  liveMapEntries,
  TtlPolicy,
  ttlAggregatingState,
  ttlListState,
  ttlMapState,
  ttlReducingState,
  ttlValueState,
  type TtlValue,
} from '../ttl.ts';
import { checkMaxParallelism } from '../snapshot-format/handle-files.ts';
import { readHandleEntries } from '../snapshot-format/handle-entries.ts';
import {
  MemoryAggregatingState,
  MemoryListState,
  MemoryMapState,
  MemoryReducingState,
  MemoryValueState,
} from './memory-handles.ts';
import { CurrentKey, StateTable } from './state-table.ts';
import { StoredStateCorruptError } from '../snapshot-format/state-errors.ts';
import {
  RestoredTimerCollector,
  storedTimestamps,
  timerDomainOfState,
  type TimerKeyGroupSnapshot,
} from '../timer-state.ts';

type StateKind = StateDescriptor['kind'];

interface Registration {
  readonly kind: StateKind;
  readonly ttl: TtlPolicy | undefined;
  readonly handle: unknown;
}

/**
 * Keyed state on the JS heap, organised by key group (see StateTable).
 *
 * Snapshot form of an entry's value (shared with other backends, so a snapshot can be restored anywhere):
 * value/reducing -> the value, aggregating -> the accumulator, list -> an array, map -> an array of [userKey, value]
 * pairs; with TTL each value, list element or map value is a `TtlValue` ({ v, t }). Changing a state's kind or
 * switching its TTL on or off across a restore is not supported (the stored form differs).
 *
 * Immutability: `snapshot()` copies the containers the backend owns (entry arrays, lists, maps) but not the values
 * in them. Values (and accumulators) must be treated as immutable once handed to state: a ReduceFunction or
 * AggregateFunction that mutates its accumulator in place and returns it would change a snapshot taken earlier.
 * Return a new object instead.
 *
 * TTL: expired entries are removed when touched through a handle and left out of snapshots; `keys()` and
 * `entryCount()` count entries that have expired but were not touched yet.
 */
export class MemoryKeyedStateBackend implements KeyedStateBackend {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;

  private readonly now: () => number;
  private readonly groupCount: number;
  private readonly keyGroupOf: KeyGroupFunction;
  private readonly current = new CurrentKey();
  private readonly tables = new Map<string, StateTable>();
  private readonly restoredTimers = new RestoredTimerCollector();
  private readonly registrations = new Map<string, Registration>();

  constructor(options: KeyedStateBackendOptions) {
    const keyGroupRange = checkedKeyGroupRange(options);
    const maxParallelism = options.maxParallelism;
    this.keyGroupRange = keyGroupRange;
    this.maxParallelism = maxParallelism;
    this.now = options.now;
    this.groupCount = keyGroupRange.end - keyGroupRange.start + 1;
    this.keyGroupOf = options.keyGroupOf ?? keyGroupOf;
  }

  setCurrentKey(key: Key): void {
    const current = this.current;
    if (key === current.key && current.index >= 0) return;
    const keyGroup = this.keyGroupOf(key, this.maxParallelism);
    const index = keyGroup - this.keyGroupRange.start;
    if (index < 0 || index >= this.groupCount) {
      throw new InternalError(
        `key ${JSON.stringify(key)} belongs to key group ${keyGroup}, outside this subtask's range ` +
          `[${this.keyGroupRange.start}, ${this.keyGroupRange.end}]: records were partitioned to the wrong subtask`,
      );
    }
    current.key = key;
    current.index = index;
  }

  getCurrentKey(): Key {
    if (this.current.index < 0) throw new InternalError('no current key has been set');
    return this.current.key;
  }

  getCurrentKeyGroup(): number {
    if (this.current.index < 0) throw new InternalError('no current key has been set');
    return this.current.index + this.keyGroupRange.start;
  }

  getValueState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T> {
    return this.register(descriptor, (table, ttl) =>
      ttl === undefined
        ? new MemoryValueState<T>(table as StateTable<T>)
        : ttlValueState(new MemoryValueState<TtlValue<T>>(table as StateTable<TtlValue<T>>), ttl),
    );
  }

  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T> {
    return this.register(descriptor, (table, ttl) =>
      ttl === undefined
        ? new MemoryListState<T>(table as StateTable<T[]>)
        : ttlListState(new MemoryListState<TtlValue<T>>(table as StateTable<TtlValue<T>[]>), ttl),
    );
  }

  getMapState<UK extends Key, V>(descriptor: MapStateDescriptor<UK, V>): InternalMapState<UK, V> {
    return this.register(descriptor, (table, ttl) =>
      ttl === undefined
        ? new MemoryMapState<UK, V>(table as StateTable<Map<UK, V>>)
        : ttlMapState(new MemoryMapState<UK, TtlValue<V>>(table as StateTable<Map<UK, TtlValue<V>>>), ttl),
    );
  }

  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T> {
    return this.register(descriptor, (table, ttl) =>
      ttl === undefined
        ? new MemoryReducingState<T>(table as StateTable<T>, descriptor.reduce)
        : ttlReducingState(
            new MemoryValueState<TtlValue<T>>(table as StateTable<TtlValue<T>>),
            descriptor.reduce,
            ttl,
          ),
    );
  }

  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): InternalAggregatingState<IN, ACC, OUT> {
    return this.register(descriptor, (table, ttl) =>
      ttl === undefined
        ? new MemoryAggregatingState<IN, ACC, OUT>(table as StateTable<ACC>, descriptor.aggregate)
        : ttlAggregatingState(
            new MemoryValueState<TtlValue<ACC>>(table as StateTable<TtlValue<ACC>>),
            descriptor.aggregate,
            ttl,
          ),
    );
  }

  keys(stateName: string, namespace: Namespace): Key[] {
    const table = this.tables.get(stateName);
    return table === undefined ? [] : table.keys(namespace);
  }

  entryCount(): number {
    let count = 0;
    for (const table of this.tables.values()) count += table.entryCount();
    return count;
  }

  snapshot(): KeyedStateSnapshot {
    const now = this.now();
    const keyGroups: KeyGroupSnapshot[] = [];
    for (let index = 0; index < this.groupCount; index++) {
      let states: Record<string, [Key, Namespace, unknown][]> | undefined;
      for (const table of this.tables.values()) {
        const byKey = table.groups[index];
        if (byKey === undefined || byKey.size === 0) continue;
        const registration = this.registrations.get(table.name);
        const entries: [Key, Namespace, unknown][] = [];
        for (const [key, byNamespace] of byKey) {
          for (const [namespace, value] of byNamespace) {
            const copy = registration === undefined ? value : snapshotValue(registration, value, now);
            if (copy !== undefined) entries.push([key, namespace, copy]);
          }
        }
        if (entries.length === 0) continue;
        // A null prototype keeps state names such as "__proto__" ordinary keys.
        states ??= Object.create(null) as Record<string, [Key, Namespace, unknown][]>;
        states[table.name] = entries;
      }
      if (states !== undefined) keyGroups.push({ keyGroup: this.keyGroupRange.start + index, states });
    }
    return { maxParallelism: this.maxParallelism, keyGroups };
  }

  /**
   * Plain snapshots load synchronously; state files (the RocksDB backend's checkpoints and savepoints) are read
   * through `store` and make this return a promise.
   */
  restore(snapshots: readonly KeyedStateHandle[], store?: SharedStateStore): void | Promise<void> {
    for (const snapshot of snapshots) checkMaxParallelism(snapshot.maxParallelism, this.maxParallelism);
    const files: FileKeyedStateSnapshot[] = [];
    for (const snapshot of snapshots) {
      if (isFileKeyedStateSnapshot(snapshot)) files.push(snapshot);
      else this.restorePlain(snapshot);
    }
    if (files.length > 0) return this.restoreFiles(files, store);
  }

  private restorePlain(snapshot: KeyedStateSnapshot): void {
    for (const group of snapshot.keyGroups) {
      if (!keyGroupRangeContains(this.keyGroupRange, group.keyGroup)) continue;
      const index = group.keyGroup - this.keyGroupRange.start;
      for (const name of Object.keys(group.states)) {
        for (const [key, namespace, value] of group.states[name] ?? []) this.loadEntry(name, index, key, namespace, value);
      }
    }
  }

  private async restoreFiles(handles: readonly FileKeyedStateSnapshot[], store: SharedStateStore | undefined): Promise<void> {
    const tempDir = await mkdtemp(join(tmpdir(), 'sluice-state-restore-'));
    try {
      for (const handle of handles) {
        await readHandleEntries(handle, store, this.keyGroupRange, tempDir, (keyGroup, key, entries) => {
          const index = keyGroup - this.keyGroupRange.start;
          // A file's row replaces everything earlier files held for the key.
          for (const table of this.tables.values()) table.deleteKey(index, key);
          this.restoredTimers.resetKey(key);
          if (entries === undefined) return;
          for (const [name, namespace, value] of entries) {
            const domain = timerDomainOfState(name);
            if (domain === undefined) this.loadEntry(name, index, key, namespace, value);
            else this.restoredTimers.add(domain, keyGroup, key, namespace, timerTimestamps(value, name));
          }
        });
      }
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  }

  /** Timers of state files written by a backend that keeps timers as keyed state (RocksDB): heap timers here. */
  takeRestoredTimers(): TimerKeyGroupSnapshot[] {
    return this.restoredTimers.take();
  }

  private loadEntry(name: string, index: number, key: Key, namespace: Namespace, value: unknown): void {
    const table = this.tableFor(name);
    const registration = this.registrations.get(name);
    table.load(index, key, namespace, registration === undefined ? value : fromSnapshot(name, registration.kind, value));
  }

  dispose(): void {
    for (const table of this.tables.values()) table.clear();
    this.tables.clear();
    this.registrations.clear();
    this.current.index = -1;
  }

  private tableFor(name: string): StateTable {
    let table = this.tables.get(name);
    if (table === undefined) {
      table = new StateTable(name, this.groupCount, this.current);
      this.tables.set(name, table);
    }
    return table;
  }

  /** Returns the cached handle for the name, or creates it (converting entries restored before it existed). */
  private register<H>(
    descriptor: Pick<StateDescriptor, 'name' | 'kind' | 'ttl'>,
    create: (table: StateTable, ttl: TtlPolicy | undefined) => H,
  ): H {
    const existing = this.registrations.get(descriptor.name);
    if (existing !== undefined) {
      if (existing.kind !== descriptor.kind) {
        throw new ConfigError(
          `state "${descriptor.name}" was registered as ${existing.kind} state and is now requested as ` +
            `${descriptor.kind} state; use a different name for each state`,
        );
      }
      const sameTtl = existing.ttl === undefined ? descriptor.ttl === undefined : existing.ttl.sameAs(descriptor.ttl);
      if (!sameTtl) {
        throw new ConfigError(`state "${descriptor.name}" was already registered with a different TTL configuration`);
      }
      return existing.handle as H;
    }
    const ttl = descriptor.ttl === undefined ? undefined : new TtlPolicy(descriptor.ttl, this.now);
    const table = this.tableFor(descriptor.name);
    const kind = descriptor.kind;
    if (kind === 'list' || kind === 'map') table.convertAll((value) => fromSnapshot(descriptor.name, kind, value));
    const handle = create(table, ttl);
    this.registrations.set(descriptor.name, { kind, ttl, handle });
    return handle;
  }
}

/** Copy of a live value in snapshot form, or undefined when it has expired entirely. */
function snapshotValue(registration: Registration, value: unknown, now: number): unknown {
  const ttl = registration.ttl;
  switch (registration.kind) {
    case 'list': {
      const list = value as unknown[];
      if (ttl === undefined) return list.slice();
      const live = liveElements(list as TtlValue<unknown>[], ttl, now);
      return live === undefined ? undefined : live.slice();
    }
    case 'map': {
      const map = value as Map<Key, unknown>;
      if (ttl === undefined) return Array.from(map);
      return liveMapEntries(map as Map<Key, TtlValue<unknown>>, ttl, now);
    }
    default:
      return ttl !== undefined && ttl.isExpired(value as TtlValue<unknown>, now) ? undefined : value;
  }
}

/** Live form of a snapshot value: the backend owns (and mutates) list arrays and maps, so they are copied. */
function fromSnapshot(name: string, kind: StateKind, value: unknown): unknown {
  if (kind === 'list') {
    if (!Array.isArray(value)) throw incompatible(name, kind);
    return value.slice();
  }
  if (kind === 'map') {
    if (value instanceof Map) return new Map(value);
    if (!Array.isArray(value)) throw incompatible(name, kind);
    return new Map(value as [Key, unknown][]);
  }
  return value;
}

function incompatible(name: string, kind: StateKind): ConfigError {
  return new ConfigError(
    `restored entries of state "${name}" are not in the snapshot form of ${kind} state; was the state's kind changed?`,
  );
}

function timerTimestamps(value: unknown, name: string): number[] {
  const timestamps = storedTimestamps(value);
  if (timestamps === undefined) throw new StoredStateCorruptError(`state "${name}"`, 'a timer entry is not an array of timestamps');
  return timestamps;
}
