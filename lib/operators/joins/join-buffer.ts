import {
  listState,
  mapState,
  VOID_NAMESPACE,
  type InternalListState,
  type InternalMapState,
  type KeyedStateBackend,
} from '../../state/index.ts';

/**
 * The buffered records of one join input, for the backend's current key, grouped in numbered buckets (an event
 * timestamp, an expiry time, or a single bucket). Records live in list state namespaced by bucket, so adding one
 * appends without copying its bucket (map state would need a new array per add, since stored values are
 * immutable); a map state per key lists the live buckets, so a probe finds them without a scan of the backend.
 * With `keepTimestamps` a second list, parallel to the records, holds their event timestamps.
 */
export class JoinBuffer<T> {
  private readonly records: InternalListState<T>;
  private readonly times: InternalListState<number> | undefined;
  private readonly buckets: InternalMapState<number, 1>;

  constructor(backend: KeyedStateBackend, name: string, keepTimestamps: boolean) {
    this.records = backend.getListState(listState<T>(`${name}-records`));
    this.times = keepTimestamps ? backend.getListState(listState<number>(`${name}-timestamps`)) : undefined;
    this.buckets = backend.getMapState(mapState<number, 1>(`${name}-buckets`));
    this.buckets.setCurrentNamespace(VOID_NAMESPACE);
  }

  add(bucket: number, value: T, timestamp: number): void {
    this.records.setCurrentNamespace(bucket);
    this.records.add(value);
    if (this.times !== undefined) {
      this.times.setCurrentNamespace(bucket);
      this.times.add(timestamp);
    }
    this.buckets.put(bucket, 1);
  }

  /** The current key's non-empty buckets, in no particular order. */
  bucketIds(): number[] {
    return this.buckets.keys();
  }

  recordsOf(bucket: number): T[] {
    this.records.setCurrentNamespace(bucket);
    return this.records.get();
  }

  /** Timestamps parallel to `recordsOf(bucket)`; only with `keepTimestamps`. */
  timestampsOf(bucket: number): number[] {
    const times = this.times as InternalListState<number>;
    times.setCurrentNamespace(bucket);
    return times.get();
  }

  removeBucket(bucket: number): void {
    this.records.setCurrentNamespace(bucket);
    this.records.clear();
    if (this.times !== undefined) {
      this.times.setCurrentNamespace(bucket);
      this.times.clear();
    }
    this.buckets.remove(bucket);
  }
}
