import type { Key, KeyGroupRange } from '../core/index.ts';
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from './descriptors.ts';
import type {
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
  Namespace,
} from './keyed-state.ts';

/** One key group's state as plain data: per state name, the entries [key, namespace, value]. */
export interface KeyGroupSnapshot {
  readonly keyGroup: number;
  readonly states: Record<string, [Key, Namespace, unknown][]>;
}

/** A point-in-time copy of the keyed state of one subtask, organised by key group so it can be redistributed. */
export interface KeyedStateSnapshot {
  readonly maxParallelism: number;
  readonly keyGroups: KeyGroupSnapshot[];
}

export interface KeyedStateBackendOptions {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Processing-time clock for TTL. */
  readonly now: () => number;
}

/**
 * Keyed state of one operator subtask. The operator sets the current key before touching state; every handle
 * created here reads and writes the entry of that key (and namespace).
 */
export interface KeyedStateBackend {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;

  /** Sets the key (and derives its key group) for all subsequent state access. */
  setCurrentKey(key: Key): void;
  getCurrentKey(): Key;
  getCurrentKeyGroup(): number;

  /** Handles are created once per descriptor name and reused; the same name must keep the same kind. */
  getValueState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T>;
  getMapState<UK extends Key, V>(descriptor: MapStateDescriptor<UK, V>): InternalMapState<UK, V>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): InternalAggregatingState<IN, ACC, OUT>;

  /** Keys that have an entry in the named state under `namespace` (for applyToAllKeys-style operations). */
  keys(stateName: string, namespace: Namespace): Key[];

  /** Number of (key, namespace) entries across all states; for metrics and tests. */
  entryCount(): number;

  /** Copies all state, per key group. Later writes do not change the returned snapshot. */
  snapshot(): KeyedStateSnapshot;
  /** Loads the key groups of `snapshots` that fall in this backend's range; others are ignored (rescaling). */
  restore(snapshots: readonly KeyedStateSnapshot[]): void;

  dispose(): void;
}
